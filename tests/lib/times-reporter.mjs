// A node:test reporter that writes one JSON line per finished test: its
// file, name, nesting and duration. scripts/test passes it beside the
// spec reporter (--test-reporter=... --test-reporter-destination=FILE)
// and scripts/test-times reads the lines to name each runner's slowest
// tests.
export default async function* times(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, name, nesting, details } = event.data;
    yield `${JSON.stringify({
      file,
      name,
      nesting,
      ms: details?.duration_ms ?? null,
      suite: details?.type === 'suite',
      ok: event.type === 'test:pass',
      skip: Boolean(event.data.skip),
    })}\n`;
  }
}

// A node:test reporter that writes one JSON line per finished test: its
// file, name, nesting, duration and, for a failure, its error. scripts/test passes it beside the
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
      // What scripts/test-times prints of a failure (its cause's
      // message too, where the error wraps one), bounded.
      error:
        event.type === 'test:fail'
          ? String(details?.error?.cause?.message ?? details?.error?.message ?? '').slice(0, 2000)
          : undefined,
    })}\n`;
  }
}

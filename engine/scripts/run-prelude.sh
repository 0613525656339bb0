# What run_project puts before its entrypoint's command line: mcp_ts, which
# runs a TypeScript file through the typescript package's transpiler, and
# Go's caches in the sandbox user's home.
mcp_ts() {
	node -e 'const ts = require("typescript"), fs = require("fs"),
	    M = require("module"), p = require("path");
	const f = p.resolve(process.argv[1]);
	const js = ts.transpileModule(fs.readFileSync(f, "utf8"),
	    {compilerOptions: {module: ts.ModuleKind.CommonJS,
	    target: ts.ScriptTarget.ES2020}}).outputText;
	const m = new M(f, null);
	m.filename = f;
	m.paths = M._nodeModulePaths(p.dirname(f));
	m._compile(js, f);' "$@"
}
export GOTMPDIR="$HOME/.cache/gotmp" GOFLAGS=-mod=mod

/*
 * Dependency detection: scans source code (never runs it) for the packages
 * it imports, and validates package names before they reach a package
 * manager's command line.
 *
 * Each language has a small tokenizer that knows enough of the lexical
 * grammar (comments, every kind of string, template literals, regular
 * expressions) that an import written inside a string or a comment is
 * never taken for a real one, and a parser that only looks at the tokens
 * that can start an import.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "deps.h"

#define NAME_MAX_LEN 256 /* longer module names are ignored */
#define NEST_MAX 32 /* f-string and template literal nesting */
#define VALID_MAX_LEN 256 /* deps_valid_name: longest accepted argument */

/* Python 3.12 standard library and built-in modules (plus the modules of
 * 3.11 and 3.13-3.14, which are not packages either). Sorted (strcmp). */
static const char *const py_stdlib[] = {"__future__", "__main__", "_abc",
    "_aix_support", "_android_support", "_ast", "_asyncio", "_bisect",
    "_blake2", "_bootsubprocess", "_bz2", "_codecs", "_codecs_cn", "_codecs_hk",
    "_codecs_iso2022", "_codecs_jp", "_codecs_kr", "_codecs_tw", "_collections",
    "_collections_abc", "_colorize", "_compat_pickle", "_compression",
    "_contextvars", "_crypt", "_csv", "_ctypes", "_ctypes_test", "_curses",
    "_curses_panel", "_datetime", "_dbm", "_decimal", "_elementtree",
    "_frozen_importlib", "_frozen_importlib_external", "_functools", "_gdbm",
    "_hashlib", "_heapq", "_hmac", "_imp", "_interpchannels", "_interpqueues",
    "_interpreters", "_io", "_ios_support", "_json", "_locale", "_lsprof",
    "_lzma", "_markupbase", "_md5", "_msi", "_multibytecodec",
    "_multiprocessing", "_opcode", "_opcode_metadata", "_operator",
    "_osx_support", "_overlapped", "_pickle", "_posixshmem", "_posixsubprocess",
    "_py_abc", "_pydatetime", "_pydecimal", "_pyio", "_pylong", "_pyrepl",
    "_queue", "_random", "_scproxy", "_sha1", "_sha2", "_sha256", "_sha3",
    "_sha512", "_signal", "_sitebuiltins", "_socket", "_sqlite3", "_sre",
    "_ssl", "_stat", "_statistics", "_string", "_strptime", "_struct",
    "_suggestions", "_symtable", "_sysconfig", "_testbuffer", "_testcapi",
    "_testclinic", "_testimportmultiple", "_testinternalcapi",
    "_testmultiphase", "_testsinglephase", "_thread", "_threading_local",
    "_tkinter", "_tokenize", "_tracemalloc", "_typeshed", "_typing", "_uuid",
    "_warnings", "_weakref", "_weakrefset", "_winapi", "_wmi",
    "_xxinterpchannels", "_xxinterpqueues", "_xxsubinterpreters", "_xxtestfuzz",
    "_zoneinfo", "abc", "aifc", "annotationlib", "antigravity", "argparse",
    "array", "ast", "asynchat", "asyncio", "asyncore", "atexit", "audioop",
    "base64", "bdb", "binascii", "bisect", "builtins", "bz2", "cProfile",
    "calendar", "cgi", "cgitb", "chunk", "cmath", "cmd", "code", "codecs",
    "codeop", "collections", "colorsys", "compileall", "concurrent",
    "configparser", "contextlib", "contextvars", "copy", "copyreg", "crypt",
    "csv", "ctypes", "curses", "dataclasses", "datetime", "dbm", "decimal",
    "difflib", "dis", "distutils", "doctest", "email", "encodings", "ensurepip",
    "enum", "errno", "faulthandler", "fcntl", "filecmp", "fileinput", "fnmatch",
    "fractions", "ftplib", "functools", "gc", "genericpath", "getopt",
    "getpass", "gettext", "glob", "graphlib", "grp", "gzip", "hashlib", "heapq",
    "hmac", "html", "http", "idlelib", "imaplib", "imghdr", "imp", "importlib",
    "inspect", "io", "ipaddress", "itertools", "json", "keyword", "lib2to3",
    "linecache", "locale", "logging", "lzma", "mailbox", "mailcap", "marshal",
    "math", "mimetypes", "mmap", "modulefinder", "msilib", "msvcrt",
    "multiprocessing", "netrc", "nis", "nntplib", "nt", "ntpath", "nturl2path",
    "numbers", "opcode", "operator", "optparse", "os", "ossaudiodev", "pathlib",
    "pdb", "pickle", "pickletools", "pipes", "pkgutil", "platform", "plistlib",
    "poplib", "posix", "posixpath", "pprint", "profile", "pstats", "pty", "pwd",
    "py_compile", "pyclbr", "pydoc", "pydoc_data", "pyexpat", "queue", "quopri",
    "random", "re", "readline", "reprlib", "resource", "rlcompleter", "runpy",
    "sched", "secrets", "select", "selectors", "shelve", "shlex", "shutil",
    "signal", "site", "smtpd", "smtplib", "sndhdr", "socket", "socketserver",
    "spwd", "sqlite3", "sre_compile", "sre_constants", "sre_parse", "ssl",
    "stat", "statistics", "string", "stringprep", "struct", "subprocess",
    "sunau", "symtable", "sys", "sysconfig", "syslog", "tabnanny", "tarfile",
    "telnetlib", "tempfile", "termios", "test", "textwrap", "this", "threading",
    "time", "timeit", "tkinter", "token", "tokenize", "tomllib", "trace",
    "traceback", "tracemalloc", "tty", "turtle", "turtledemo", "types",
    "typing", "unicodedata", "unittest", "urllib", "uu", "uuid", "venv",
    "warnings", "wave", "weakref", "webbrowser", "winreg", "winsound",
    "wsgiref", "xdrlib", "xml", "xmlrpc", "xxlimited", "xxlimited_35",
    "xxsubtype", "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo"};

struct pymap {
	const char *module; /* top-level or dotted module name */
	const char *package; /* PyPI name; "" for a bare namespace */
};

/* Modules whose PyPI distribution has another name. Sorted (strcmp). */
static const struct pymap py_packages[] = {
    {"Bio", "biopython"},
    {"Crypto", "pycryptodome"},
    {"Cryptodome", "pycryptodomex"},
    {"Levenshtein", "python-Levenshtein"},
    {"MySQLdb", "mysqlclient"},
    {"OpenGL", "PyOpenGL"},
    {"OpenSSL", "pyopenssl"},
    {"PIL", "pillow"},
    {"Xlib", "python-xlib"},
    {"_pytest", "pytest"},
    {"absl", "absl-py"},
    {"attr", "attrs"},
    {"azure", ""},
    {"azure.identity", "azure-identity"},
    {"azure.storage.blob", "azure-storage-blob"},
    {"bs4", "beautifulsoup4"},
    {"bson", "pymongo"},
    {"cairo", "pycairo"},
    {"community", "python-louvain"},
    {"cv2", "opencv-python"},
    {"dateutil", "python-dateutil"},
    {"discord", "discord.py"},
    {"dns", "dnspython"},
    {"docx", "python-docx"},
    {"dotenv", "python-dotenv"},
    {"engineio", "python-engineio"},
    {"faiss", "faiss-cpu"},
    {"fitz", "pymupdf"},
    {"gi", "PyGObject"},
    {"git", "GitPython"},
    {"github", "PyGithub"},
    {"google", ""},
    {"google.api_core", "google-api-core"},
    {"google.auth", "google-auth"},
    {"google.genai", "google-genai"},
    {"google.generativeai", "google-generativeai"},
    {"google.oauth2", "google-auth"},
    {"google.protobuf", "protobuf"},
    {"googleapiclient", "google-api-python-client"},
    {"grpc", "grpcio"},
    {"jose", "python-jose"},
    {"jwt", "pyjwt"},
    {"kafka", "kafka-python"},
    {"ldap", "python-ldap"},
    {"llama_cpp", "llama-cpp-python"},
    {"magic", "python-magic"},
    {"memcache", "python-memcached"},
    {"mpl_toolkits", "matplotlib"},
    {"multipart", "python-multipart"},
    {"nacl", "pynacl"},
    {"newspaper", "newspaper3k"},
    {"osgeo", "gdal"},
    {"paho", "paho-mqtt"},
    {"pkg_resources", "setuptools"},
    {"pptx", "python-pptx"},
    {"psycopg2", "psycopg2-binary"},
    {"pythoncom", "pywin32"},
    {"pyximport", "cython"},
    {"rest_framework", "djangorestframework"},
    {"ruamel", "ruamel.yaml"},
    {"serial", "pyserial"},
    {"shapefile", "pyshp"},
    {"skimage", "scikit-image"},
    {"sklearn", "scikit-learn"},
    {"slugify", "python-slugify"},
    {"snappy", "python-snappy"},
    {"socketio", "python-socketio"},
    {"socks", "pysocks"},
    {"speech_recognition", "SpeechRecognition"},
    {"telegram", "python-telegram-bot"},
    {"umap", "umap-learn"},
    {"usb", "pyusb"},
    {"websocket", "websocket-client"},
    {"win32api", "pywin32"},
    {"win32com", "pywin32"},
    {"win32con", "pywin32"},
    {"wx", "wxPython"},
    {"yaml", "pyyaml"},
    {"zmq", "pyzmq"},
};

/* Node 20 built-in modules (require('module').builtinModules); anything
 * with the node: prefix is built in too. Sorted (strcmp). */
static const char *const node_builtins[] = {"_http_agent", "_http_client",
    "_http_common", "_http_incoming", "_http_outgoing", "_http_server",
    "_stream_duplex", "_stream_passthrough", "_stream_readable",
    "_stream_transform", "_stream_wrap", "_stream_writable", "_tls_common",
    "_tls_wrap", "assert", "assert/strict", "async_hooks", "buffer",
    "child_process", "cluster", "console", "constants", "crypto", "dgram",
    "diagnostics_channel", "dns", "dns/promises", "domain", "events", "fs",
    "fs/promises", "http", "http2", "https", "inspector", "inspector/promises",
    "module", "net", "os", "path", "path/posix", "path/win32", "perf_hooks",
    "process", "punycode", "querystring", "readline", "readline/promises",
    "repl", "stream", "stream/consumers", "stream/promises", "stream/web",
    "string_decoder", "sys", "timers", "timers/promises", "tls", "trace_events",
    "tty", "url", "util", "util/types", "v8", "vm", "wasi", "worker_threads",
    "zlib"};

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

static int
cmp_str(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

static int
cmp_pymap(const void *key, const void *elem)
{
	return strcmp(key, ((const struct pymap *)elem)->module);
}

static int
in_list(const char *const *list, size_t n, const char *name)
{
	return bsearch(name, list, n, sizeof(list[0]), cmp_str) != NULL;
}

int
deps_check_tables(void)
{
	size_t i;

	for (i = 1; i < NITEMS(py_stdlib); i++)
		if (strcmp(py_stdlib[i - 1], py_stdlib[i]) >= 0)
			return -1;
	for (i = 1; i < NITEMS(py_packages); i++)
		if (strcmp(py_packages[i - 1].module, py_packages[i].module) >=
		    0)
			return -1;
	for (i = 1; i < NITEMS(node_builtins); i++)
		if (strcmp(node_builtins[i - 1], node_builtins[i]) >= 0)
			return -1;
	return 0;
}

/*
 * The result: an array in order of first appearance and a json object
 * used as a set for deduplication. Both are owned by the caller of
 * deps_detect until the array is returned.
 */
struct found {
	struct json_object *list;
	struct json_object *seen;
	const char *manager; /* the names it takes (deps_valid_name) */
	int failed; /* an allocation failed */
};

/*
 * Appends name (n bytes) unless it is already there, or is no name the
 * language's manager takes (a module named in Unicode, for one): the
 * names go to the manager's command line.
 */
static void
found_add(struct found *f, const char *name, size_t n)
{
	struct json_object *s;
	char buf[NAME_MAX_LEN * 2];

	if (n == 0 || n >= sizeof buf || f->failed)
		return;
	memcpy(buf, name, n);
	buf[n] = '\0';
	if (json_object_object_get_ex(f->seen, buf, NULL) ||
	    !deps_valid_name(f->manager, buf))
		return;
	if ((s = json_object_new_string_len(buf, (int)n)) == NULL) {
		f->failed = 1;
		return;
	}
	if (json_object_array_add(f->list, s) != 0) {
		json_object_put(s);
		f->failed = 1;
		return;
	}
	if (json_object_object_add(f->seen, buf, NULL) != 0)
		f->failed = 1;
}

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
is_alnum(int c)
{
	return is_alpha(c) || is_digit(c);
}

/* Identifier characters of Python and Go; bytes of UTF-8 sequences are
 * taken as letters, which both languages allow in names. */
static int
is_ident(int c)
{
	return is_alnum(c) || c == '_' || (unsigned char)c >= 0x80;
}

/* Does the token (s, n) spell word? */
static int
tok_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

enum tok_type {
	T_EOF,
	T_NAME,
	T_STRING, /* a plain string literal: s, n is its body */
	T_TEMPLATE, /* a string with code in it: not a literal */
	T_NEWLINE, /* Python: end of a logical line */
	T_PUNCT, /* one character, in c */
	T_OTHER, /* a number, a regular expression, an operator */
};

struct tok {
	enum tok_type type;
	const char *s; /* T_NAME, T_STRING */
	size_t n;
	int c; /* T_PUNCT */
};

/* ---------------------------------------------------------------- Python */

/* A scanner of source text with one token of lookahead (both languages). */
struct scan {
	const char *p, *end;
	int depth; /* Python: open brackets, inside which newlines do not
	              end a line */
	struct tok la; /* one token of lookahead */
	int has_la;
};

typedef void (*scan_lex)(struct scan *, struct tok *);

static void
scan_get(struct scan *s, struct tok *t, scan_lex lex)
{
	if (s->has_la) {
		*t = s->la;
		s->has_la = 0;
	} else
		lex(s, t);
}

static const struct tok *
scan_peek(struct scan *s, scan_lex lex)
{
	if (!s->has_la) {
		lex(s, &s->la);
		s->has_la = 1;
	}
	return &s->la;
}

static void py_skip_string(struct scan *, int, int);

/* Is the identifier (s, n) before a quote a string prefix? Sets *fmt for
 * the prefixes whose strings hold code (f-strings, t-strings). */
static int
py_prefix(const char *s, size_t n, int *fmt)
{
	int c0, c1;

	*fmt = 0;
	if (n == 0 || n > 2)
		return 0;
	if (!is_alpha(s[0]) || (n == 2 && !is_alpha(s[1])))
		return 0;
	c0 = s[0] | 0x20;
	if (n == 1) {
		*fmt = c0 == 'f' || c0 == 't';
		return strchr("rubft", c0) != NULL;
	}
	c1 = s[1] | 0x20;
	if (c0 != 'r' && c1 != 'r')
		return 0;
	if (c0 == 'r')
		c0 = c1;
	*fmt = c0 == 'f' || c0 == 't';
	return c0 == 'b' || c0 == 'f' || c0 == 't';
}

/* Skips a backslash escape at s->p (a line continuation included). */
static void
py_skip_escape(struct scan *s)
{
	s->p++;
	if (s->p < s->end && *s->p == '\r')
		s->p++;
	if (s->p < s->end)
		s->p++;
}

static void py_skip_field(struct scan *, int);

/* Skips the format spec of an f-string field, up to and past its '}'. */
static void
py_skip_spec(struct scan *s, int level)
{
	while (s->p < s->end) {
		if (*s->p == '}') {
			s->p++;
			return;
		}
		if (*s->p == '{') {
			s->p++;
			py_skip_field(s, level);
			continue;
		}
		if (*s->p == '\\') {
			py_skip_escape(s);
			continue;
		}
		s->p++;
	}
}

/* Skips the code of an f-string replacement field after its '{', up to
 * and past the matching '}'. Strings inside may reuse the outer quote
 * (PEP 701), so they are skipped as strings of their own. */
static void
py_skip_field(struct scan *s, int level)
{
	const char *id;
	int depth = 0, fmt;

	if (level > NEST_MAX)
		return; /* treat the rest as text of the outer string */
	while (s->p < s->end) {
		char c = *s->p;

		if (c == '\'' || c == '"') {
			py_skip_string(s, 0, level + 1);
		} else if (is_ident(c)) {
			id = s->p;
			while (s->p < s->end && is_ident(*s->p))
				s->p++;
			if (s->p < s->end && (*s->p == '\'' || *s->p == '"') &&
			    py_prefix(id, s->p - id, &fmt))
				py_skip_string(s, fmt, level + 1);
		} else if (c == '#') {
			while (s->p < s->end && *s->p != '\n')
				s->p++;
		} else if (c == '(' || c == '[' || c == '{') {
			depth++;
			s->p++;
		} else if (c == ')' || c == ']') {
			if (depth > 0)
				depth--;
			s->p++;
		} else if (c == '}') {
			s->p++;
			if (depth-- == 0)
				return;
		} else if (c == ':' && depth == 0) {
			s->p++;
			py_skip_spec(s, level + 1);
			return;
		} else if (c == '\\') {
			py_skip_escape(s);
		} else {
			s->p++;
		}
	}
}

/* Skips a string literal whose opening quote is at s->p. fmt: an f- or
 * t-string, whose replacement fields are code. A single-quoted string
 * ends at an unescaped newline even when unterminated, as the tokenizer
 * would report it there. */
static void
py_skip_string(struct scan *s, int fmt, int level)
{
	char q = *s->p;
	int triple;

	triple = s->end - s->p >= 3 && s->p[1] == q && s->p[2] == q;
	s->p += triple ? 3 : 1;
	while (s->p < s->end) {
		char c = *s->p;

		if (c == '\\') {
			py_skip_escape(s);
		} else if (c == q) {
			if (!triple) {
				s->p++;
				return;
			}
			if (s->end - s->p >= 3 && s->p[1] == q &&
			    s->p[2] == q) {
				s->p += 3;
				return;
			}
			s->p++;
		} else if (c == '\n' && !triple) {
			return;
		} else if (c == '{' && fmt) {
			if (s->end - s->p >= 2 && s->p[1] == '{') {
				s->p += 2;
				continue;
			}
			s->p++;
			py_skip_field(s, level);
		} else {
			s->p++;
		}
	}
}

/* The next token, skipping blanks, comments and line continuations. */
static void
py_lex(struct scan *s, struct tok *t)
{
	const char *start;
	int fmt;

	memset(t, 0, sizeof *t);
	while (s->p < s->end) {
		char c = *s->p;

		if (c == '\n') {
			s->p++;
			if (s->depth == 0) {
				t->type = T_NEWLINE;
				return;
			}
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
			s->p++;
			continue;
		}
		if (c == '\\') { /* joins the next line to this one */
			py_skip_escape(s);
			continue;
		}
		if (c == '#') {
			while (s->p < s->end && *s->p != '\n')
				s->p++;
			continue;
		}
		start = s->p;
		if (c == '\'' || c == '"') {
			py_skip_string(s, 0, 0);
			t->type = T_STRING;
			return;
		}
		if (is_digit(c)) {
			while (
			    s->p < s->end && (is_ident(*s->p) || *s->p == '.'))
				s->p++;
			t->type = T_OTHER;
			return;
		}
		if (is_ident(c)) {
			while (s->p < s->end && is_ident(*s->p))
				s->p++;
			if (s->p < s->end && (*s->p == '\'' || *s->p == '"') &&
			    py_prefix(start, s->p - start, &fmt)) {
				py_skip_string(s, fmt, 0);
				t->type = T_STRING;
				return;
			}
			t->type = T_NAME;
			t->s = start;
			t->n = s->p - start;
			return;
		}
		s->p++;
		if (c == '(' || c == '[' || c == '{')
			s->depth++;
		else if ((c == ')' || c == ']' || c == '}') && s->depth > 0)
			s->depth--;
		else if (c == ':' && s->p < s->end && *s->p == '=') {
			s->p++; /* := is not the colon of a compound statement
			         */
			t->type = T_OTHER;
			return;
		}
		t->type = T_PUNCT;
		t->c = (unsigned char)c;
		return;
	}
	t->type = T_EOF;
}

static void
py_get(struct scan *s, struct tok *t)
{
	scan_get(s, t, py_lex);
}

static const struct tok *
py_peek(struct scan *s)
{
	return scan_peek(s, py_lex);
}

static int
peek_punct(const struct tok *t, int c)
{
	return t->type == T_PUNCT && t->c == c;
}

static int
peek_name(const struct tok *t, const char *word)
{
	return t->type == T_NAME && tok_is(t->s, t->n, word);
}

/*
 * Reads a dotted name (NAME ('.' NAME)*) into buf. Returns its length, 0
 * when it is too long for buf (the tokens are consumed all the same), -1
 * when there is no name at all.
 */
static int
py_dotted(struct scan *s, char *buf, size_t size)
{
	struct tok t;
	size_t len = 0;
	int toolong = 0;

	if (py_peek(s)->type != T_NAME)
		return -1;
	for (;;) {
		py_get(s, &t);
		if (len + t.n + 2 > size)
			toolong = 1;
		else {
			memcpy(buf + len, t.s, t.n);
			len += t.n;
			buf[len] = '\0';
		}
		if (!peek_punct(py_peek(s), '.'))
			break;
		py_get(s, &t);
		if (py_peek(s)->type != T_NAME)
			break;
		if (!toolong)
			buf[len++] = '.';
	}
	return toolong ? 0 : (int)len;
}

/* Adds the PyPI package that provides module (a dotted name), if any. */
static void
py_add(struct found *f, const char *module)
{
	const struct pymap *m;
	char key[NAME_MAX_LEN], pkg[NAME_MAX_LEN];
	const char *dot;
	size_t n;
	char *end;

	dot = strchr(module, '.');
	n = dot != NULL ? (size_t)(dot - module) : strlen(module);
	if (n == 0 || n >= sizeof key)
		return;
	memcpy(key, module, n);
	key[n] = '\0';
	if (in_list(py_stdlib, NITEMS(py_stdlib), key))
		return;

	/* google.cloud.<name> is always google-cloud-<name>. */
	if (strncmp(module, "google.cloud.", 13) == 0) {
		n = strcspn(module + 13, ".");
		if (n > 0 && 13 + n < sizeof pkg) {
			memcpy(pkg, "google-cloud-", 13);
			memcpy(pkg + 13, module + 13, n);
			pkg[13 + n] = '\0';
			for (end = pkg + 13; end < pkg + 13 + n; end++)
				if (*end == '_')
					*end = '-';
			found_add(f, pkg, 13 + n);
			return;
		}
	}

	/* The longest dotted prefix with a mapping wins. */
	if (strlen(module) >= sizeof key)
		return;
	strcpy(key, module);
	for (;;) {
		m = bsearch(key, py_packages, NITEMS(py_packages),
		    sizeof py_packages[0], cmp_pymap);
		if (m != NULL) {
			found_add(f, m->package, strlen(m->package));
			return;
		}
		if ((end = strrchr(key, '.')) == NULL)
			break;
		*end = '\0';
	}
	found_add(f, key, strlen(key));
}

/* import a.b [as c] (, d [as e])* -- after the import keyword. */
static void
py_import(struct scan *s, struct found *f)
{
	char name[NAME_MAX_LEN];
	struct tok t;
	int n;

	for (;;) {
		if ((n = py_dotted(s, name, sizeof name)) == -1)
			return;
		if (n > 0)
			py_add(f, name);
		if (peek_name(py_peek(s), "as")) {
			py_get(s, &t);
			if (py_peek(s)->type == T_NAME)
				py_get(s, &t);
		}
		if (!peek_punct(py_peek(s), ','))
			return;
		py_get(s, &t);
	}
}

/* from a.b import c [as d], (e, f) -- after the from keyword. The names
 * imported matter only for namespace packages (google.cloud, azure). */
static void
py_from(struct scan *s, struct found *f)
{
	char mod[NAME_MAX_LEN], full[NAME_MAX_LEN * 2];
	int relative = 0, any = 0;
	struct tok t;

	while (peek_punct(py_peek(s), '.')) {
		py_get(s, &t);
		relative = 1;
	}
	if (relative)
		return; /* from . import x, from .a import b: the project's own
		         */
	if (py_dotted(s, mod, sizeof mod) <= 0)
		return;
	if (!peek_name(py_peek(s), "import"))
		return;
	py_get(s, &t);
	if (peek_punct(py_peek(s), '('))
		py_get(s, &t);
	while (py_peek(s)->type == T_NAME) {
		py_get(s, &t);
		snprintf(full, sizeof full, "%s.%.*s", mod, (int)t.n, t.s);
		if (strlen(full) < NAME_MAX_LEN) {
			py_add(f, full);
			any = 1;
		}
		if (peek_name(py_peek(s), "as")) {
			py_get(s, &t);
			if (py_peek(s)->type == T_NAME)
				py_get(s, &t);
		}
		if (!peek_punct(py_peek(s), ','))
			break;
		py_get(s, &t);
	}
	if (!any)
		py_add(f, mod); /* from a import *, or a name too long */
}

/*
 * Imports are statements: they start a logical line, follow a ';', or
 * follow the ':' of a compound statement on the same line ("if x: import
 * y", "try: import z"). A ':' at bracket depth 0 that is not one of
 * those (an annotation, a lambda) is never followed by the import or
 * from keyword, so taking every such ':' as a statement start is safe.
 */
static void
py_detect(const char *code, size_t len, struct found *f)
{
	struct scan s;
	struct tok t;
	int start = 1;

	memset(&s, 0, sizeof s);
	s.p = code;
	s.end = code + len;
	for (;;) {
		py_get(&s, &t);
		if (t.type == T_EOF || f->failed)
			return;
		if (t.type == T_NEWLINE || peek_punct(&t, ';')) {
			start = 1;
			continue;
		}
		if (peek_punct(&t, ':')) {
			start = s.depth == 0;
			continue;
		}
		if (start && peek_name(&t, "import"))
			py_import(&s, f);
		else if (start && peek_name(&t, "from"))
			py_from(&s, f);
		start = 0;
	}
}

/* ------------------------------------------------ JavaScript, TypeScript */

struct jsscan {
	const char *p, *end;
	int braces; /* open '{' */
	int tmpl[NEST_MAX]; /* braces open at each '${' of a template */
	int ntmpl;
	int regex_ok; /* a '/' here starts a regular expression */
	struct tok la;
	int has_la;
};

/* Keywords after which an expression, so a regular expression, follows. */
static int
js_expr_keyword(const char *s, size_t n)
{
	static const char *const kw[] = {"await", "case", "delete", "do",
	    "else", "in", "instanceof", "new", "of", "return", "throw",
	    "typeof", "void", "yield"};
	size_t i;

	for (i = 0; i < NITEMS(kw); i++)
		if (tok_is(s, n, kw[i]))
			return 1;
	return 0;
}

static int
js_ident(int c)
{
	return is_alnum(c) || c == '_' || c == '$' || (unsigned char)c >= 0x80;
}

/*
 * Scans template literal text from s->p (just past the '`' or the '}'
 * that closed a substitution). Returns 1 past the closing '`', 0 past a
 * '${' (its brace depth pushed: the code that follows is tokenized as
 * usual), -1 at the end of the code.
 */
static int
js_template_text(struct jsscan *s)
{
	while (s->p < s->end) {
		if (*s->p == '\\') {
			s->p += s->end - s->p >= 2 ? 2 : 1;
			continue;
		}
		if (*s->p == '`') {
			s->p++;
			return 1;
		}
		if (*s->p == '$' && s->end - s->p >= 2 && s->p[1] == '{') {
			s->p += 2;
			if (s->ntmpl == NEST_MAX) {
				s->p = s->end; /* absurd nesting: stop here */
				return -1;
			}
			s->tmpl[s->ntmpl++] = s->braces;
			return 0;
		}
		s->p++;
	}
	return -1;
}

/* Skips a regular expression literal whose '/' is at s->p. */
static void
js_skip_regex(struct jsscan *s)
{
	int inclass = 0;

	s->p++;
	while (s->p < s->end && *s->p != '\n') {
		char c = *s->p++;

		if (c == '\\' && s->p < s->end && *s->p != '\n')
			s->p++;
		else if (c == '[')
			inclass = 1;
		else if (c == ']')
			inclass = 0;
		else if (c == '/' && !inclass)
			break;
	}
	while (s->p < s->end && js_ident(*s->p))
		s->p++; /* flags */
}

static void
js_lex(struct jsscan *s, struct tok *t)
{
	const char *start;

	memset(t, 0, sizeof *t);
	while (s->p < s->end) {
		char c = *s->p;

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		    c == '\f' || c == '\v') {
			s->p++;
			continue;
		}
		if (c == '/' && s->end - s->p >= 2 && s->p[1] == '/') {
			while (s->p < s->end && *s->p != '\n')
				s->p++;
			continue;
		}
		if (c == '/' && s->end - s->p >= 2 && s->p[1] == '*') {
			s->p += 2;
			while (s->p < s->end &&
			       !(*s->p == '*' && s->end - s->p >= 2 &&
			           s->p[1] == '/'))
				s->p++;
			s->p += s->p < s->end ? 2 : 0;
			continue;
		}
		start = s->p;
		if (c == '\'' || c == '"') {
			s->p++;
			while (s->p < s->end && *s->p != c && *s->p != '\n') {
				if (*s->p == '\\' && s->end - s->p >= 2)
					s->p++;
				s->p++;
			}
			t->type = T_STRING;
			t->s = start + 1;
			t->n = s->p - start - 1;
			if (s->p < s->end && *s->p == c)
				s->p++;
			else
				t->type = T_OTHER; /* unterminated */
			s->regex_ok = 0;
			return;
		}
		if (c == '`') {
			s->p++;
			switch (js_template_text(s)) {
			case 1: /* no substitution: a plain string */
				t->type = T_STRING;
				t->s = start + 1;
				t->n = s->p - start - 2;
				s->regex_ok = 0;
				break;
			case 0:
				t->type = T_TEMPLATE;
				s->regex_ok = 1;
				break;
			default:
				t->type = T_OTHER;
				break;
			}
			return;
		}
		if (c == '}' && s->ntmpl > 0 &&
		    s->tmpl[s->ntmpl - 1] == s->braces) {
			s->ntmpl--;
			s->p++;
			if (js_template_text(s) != 0)
				s->regex_ok = 0; /* the template ended */
			continue;
		}
		if (c == '/' && s->regex_ok) {
			js_skip_regex(s);
			t->type = T_OTHER;
			s->regex_ok = 0;
			return;
		}
		if (is_digit(c)) {
			while (
			    s->p < s->end && (js_ident(*s->p) || *s->p == '.'))
				s->p++;
			t->type = T_OTHER;
			s->regex_ok = 0;
			return;
		}
		if (js_ident(c)) {
			while (s->p < s->end && js_ident(*s->p))
				s->p++;
			t->type = T_NAME;
			t->s = start;
			t->n = s->p - start;
			s->regex_ok = js_expr_keyword(t->s, t->n);
			return;
		}
		s->p++;
		if (c == '{')
			s->braces++;
		else if (c == '}' && s->braces > 0)
			s->braces--;
		t->type = T_PUNCT;
		t->c = (unsigned char)c;
		s->regex_ok = !(c == ')' || c == ']' || c == '}');
		return;
	}
	t->type = T_EOF;
}

static void
js_get(struct jsscan *s, struct tok *t)
{
	if (s->has_la) {
		*t = s->la;
		s->has_la = 0;
	} else
		js_lex(s, t);
}

static const struct tok *
js_peek(struct jsscan *s)
{
	if (!s->has_la) {
		js_lex(s, &s->la);
		s->has_la = 1;
	}
	return &s->la;
}

static int
js_in_builtins(const char *name, size_t n)
{
	char buf[64];

	if (n >= sizeof buf)
		return 0;
	memcpy(buf, name, n);
	buf[n] = '\0';
	return in_list(node_builtins, NITEMS(node_builtins), buf);
}

/* Adds the npm package a module specifier (s, n) names, if any. */
static void
js_add(struct found *f, const char *s, size_t n)
{
	const char *slash;
	size_t i, pkg;

	if (n == 0 || s[0] == '.' || s[0] == '/' || s[0] == '#')
		return; /* a path, or a package.json "imports" alias */
	for (i = 0; i < n; i++) {
		unsigned char c = s[i];

		/* node:, a URL, an escape, or no name at all */
		if (c <= ' ' || c == ':' || c == '\\' || c == '\'' ||
		    c == '"' || c == '`' || c == 0x7f)
			return;
	}
	if (s[0] == '@') {
		slash = memchr(s, '/', n);
		if (slash == NULL || slash == s + 1 || slash + 1 == s + n ||
		    slash[1] == '/')
			return;
		slash = memchr(slash + 1, '/', s + n - slash - 1);
		pkg = slash != NULL ? (size_t)(slash - s) : n;
	} else {
		slash = memchr(s, '/', n);
		pkg = slash != NULL ? (size_t)(slash - s) : n;
		if (js_in_builtins(s, n) || js_in_builtins(s, pkg))
			return;
	}
	found_add(f, s, pkg);
}

/* require ( 'x' ) -- after require. */
static void
js_require(struct jsscan *s, struct found *f, int keep)
{
	struct tok t, lit;

	if (!peek_punct(js_peek(s), '('))
		return;
	js_get(s, &t);
	if (js_peek(s)->type != T_STRING)
		return;
	js_get(s, &lit);
	if (!peek_punct(js_peek(s), ')'))
		return; /* require('a' + b): not a literal */
	js_get(s, &t);
	if (keep)
		js_add(f, lit.s, lit.n);
}

/*
 * The clause of an import or export declaration, up to and with its
 * "from 'x'": a default binding (import only), "* as n", "{ a, b as c,
 * 'd' as e }", separated by ','. A token that fits nowhere is left for
 * the caller: the declaration was not one that names a module.
 */
static void
js_clause(struct jsscan *s, struct found *f, int typeonly, int import)
{
	const struct tok *p;
	struct tok t;

	for (;;) {
		p = js_peek(s);
		if (peek_punct(p, '{')) {
			js_get(s, &t);
			for (;;) {
				p = js_peek(s);
				if (peek_punct(p, '}')) {
					js_get(s, &t);
					break;
				}
				if (p->type != T_NAME && p->type != T_STRING &&
				    !peek_punct(p, ','))
					return;
				js_get(s, &t);
			}
		} else if (peek_punct(p, '*')) {
			js_get(s, &t);
			if (peek_name(js_peek(s), "as")) {
				js_get(s, &t);
				if (js_peek(s)->type != T_NAME)
					return;
				js_get(s, &t);
			}
		} else if (import && p->type == T_NAME &&
		           !peek_name(p, "from")) {
			js_get(s, &t); /* the default binding */
			if (peek_punct(js_peek(s), '=')) {
				/* TypeScript: import x = require('y') */
				if (!typeonly)
					return;
				js_get(s, &t);
				if (peek_name(js_peek(s), "require")) {
					js_get(s, &t);
					js_require(s, f, 0);
				}
				return;
			}
		} else if (!peek_name(p, "from"))
			return;

		p = js_peek(s);
		if (peek_punct(p, ',')) {
			js_get(s, &t);
			continue;
		}
		if (!peek_name(p, "from"))
			return;
		js_get(s, &t);
		if (js_peek(s)->type != T_STRING)
			return;
		js_get(s, &t);
		if (!typeonly)
			js_add(f, t.s, t.n);
		return;
	}
}

/* After import: a declaration, import('x'), or import.meta. */
static void
js_import(struct jsscan *s, struct found *f, int after_typeof)
{
	const struct tok *p;
	struct tok t, lit;
	int typeonly = 0;

	p = js_peek(s);
	if (peek_punct(p, '(')) {
		js_get(s, &t);
		if (js_peek(s)->type != T_STRING)
			return;
		js_get(s, &lit);
		p = js_peek(s);
		/* typeof import('x') is a TypeScript type, erased. */
		if ((peek_punct(p, ')') || peek_punct(p, ',')) && !after_typeof)
			js_add(f, lit.s, lit.n);
		return;
	}
	if (p->type == T_STRING) { /* import 'side-effect' */
		js_get(s, &t);
		js_add(f, t.s, t.n);
		return;
	}
	if (peek_name(p, "type")) {
		/* import type X ..., import type {..}, import type * ...;
		 * but import type from 'x' and import type, {..} bind a
		 * default export named type. */
		js_get(s, &t);
		p = js_peek(s);
		if (peek_punct(p, '{') || peek_punct(p, '*') ||
		    (p->type == T_NAME && !peek_name(p, "from")))
			typeonly = 1;
		else if (peek_punct(p, ','))
			js_get(s, &t);
		else if (!peek_name(p, "from"))
			return;
	}
	js_clause(s, f, typeonly, 1);
}

/* After export: only export * / { } ... from 'x' names a module. */
static void
js_export(struct jsscan *s, struct found *f)
{
	const struct tok *p;
	struct tok t;
	int typeonly = 0;

	p = js_peek(s);
	if (peek_name(p, "type")) {
		js_get(s, &t);
		p = js_peek(s);
		typeonly = 1;
	}
	if (peek_punct(p, '{') || peek_punct(p, '*'))
		js_clause(s, f, typeonly, 0);
}

static void
js_detect(const char *code, size_t len, struct found *f)
{
	struct jsscan s;
	struct tok t, prev;

	memset(&s, 0, sizeof s);
	memset(&prev, 0, sizeof prev);
	s.p = code;
	s.end = code + len;
	s.regex_ok = 1;
	if (len >= 2 && code[0] == '#' && code[1] == '!')
		while (s.p < s.end && *s.p != '\n')
			s.p++;
	for (;;) {
		js_get(&s, &t);
		if (t.type == T_EOF || f->failed)
			return;
		/* x.require(), x.import are properties, not keywords */
		if (t.type == T_NAME && !peek_punct(&prev, '.')) {
			if (tok_is(t.s, t.n, "require"))
				js_require(&s, f, 1);
			else if (tok_is(t.s, t.n, "import"))
				js_import(&s, f, peek_name(&prev, "typeof"));
			else if (tok_is(t.s, t.n, "export"))
				js_export(&s, f);
		}
		prev = t;
	}
}

/* -------------------------------------------------------------------- Go */

static void
go_lex(struct scan *s, struct tok *t)
{
	const char *start;

	memset(t, 0, sizeof *t);
	while (s->p < s->end) {
		char c = *s->p;

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			s->p++;
			continue;
		}
		if (c == '/' && s->end - s->p >= 2 && s->p[1] == '/') {
			while (s->p < s->end && *s->p != '\n')
				s->p++;
			continue;
		}
		if (c == '/' && s->end - s->p >= 2 && s->p[1] == '*') {
			s->p += 2;
			while (s->p < s->end &&
			       !(*s->p == '*' && s->end - s->p >= 2 &&
			           s->p[1] == '/'))
				s->p++;
			s->p += s->p < s->end ? 2 : 0;
			continue;
		}
		start = s->p;
		if (c == '"' || c == '\'' || c == '`') {
			s->p++;
			while (s->p < s->end && *s->p != c &&
			       (c == '`' || *s->p != '\n')) {
				if (*s->p == '\\' && c != '`' &&
				    s->end - s->p >= 2)
					s->p++;
				s->p++;
			}
			t->type = c == '\'' ? T_OTHER : T_STRING;
			t->s = start + 1;
			t->n = s->p - start - 1;
			if (s->p < s->end && *s->p == c)
				s->p++;
			else
				t->type = T_OTHER;
			return;
		}
		if (is_ident(c)) {
			while (s->p < s->end && is_ident(*s->p))
				s->p++;
			t->type = T_NAME;
			t->s = start;
			t->n = s->p - start;
			return;
		}
		s->p++;
		t->type = T_PUNCT;
		t->c = (unsigned char)c;
		return;
	}
	t->type = T_EOF;
}

static void
go_get(struct scan *s, struct tok *t)
{
	scan_get(s, t, go_lex);
}

static const struct tok *
go_peek(struct scan *s)
{
	return scan_peek(s, go_lex);
}

/* Is the path element (s, n) a major version suffix, v2 and up? */
static int
go_major(const char *s, size_t n)
{
	size_t i;

	if (n < 2 || s[0] != 'v' || s[1] == '0' || (n == 2 && s[1] == '1'))
		return 0;
	for (i = 1; i < n; i++)
		if (!is_digit(s[i]))
			return 0;
	return 1;
}

/* Adds the module that provides the package at import path (s, n). */
static void
go_add(struct found *f, const char *s, size_t n)
{
	const char *el[5];
	size_t elen[5], i, nel, keep = 0, len;
	const char *p, *slash;

	for (i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c <= ' ' || c == '\\' || c == '"' || c == '\'' ||
		    c == '`' || c == 0x7f)
			return;
	}
	/* Up to the first five path elements. */
	for (nel = 0, p = s; nel < 5 && p < s + n; nel++) {
		slash = memchr(p, '/', s + n - p);
		el[nel] = p;
		elen[nel] =
		    slash != NULL ? (size_t)(slash - p) : (size_t)(s + n - p);
		if (slash == NULL) {
			nel++;
			break;
		}
		p = slash + 1;
	}
	if (nel == 0 || elen[0] == 0 || memchr(el[0], '.', elen[0]) == NULL)
		return; /* the standard library (and cgo's "C") */

	if (tok_is(el[0], elen[0], "github.com") ||
	    tok_is(el[0], elen[0], "gitlab.com") ||
	    tok_is(el[0], elen[0], "bitbucket.org"))
		keep = 3;
	else if (tok_is(el[0], elen[0], "golang.org") && nel > 1 &&
	         tok_is(el[1], elen[1], "x"))
		keep = 3;
	else if (tok_is(el[0], elen[0], "gopkg.in") && nel > 1)
		/* gopkg.in/yaml.v3, gopkg.in/user/pkg.v1 */
		keep = memchr(el[1], '.', elen[1]) != NULL ? 2 : 3;
	else if (tok_is(el[0], elen[0], "google.golang.org") ||
	         tok_is(el[0], elen[0], "go.uber.org") ||
	         tok_is(el[0], elen[0], "k8s.io") ||
	         tok_is(el[0], elen[0], "sigs.k8s.io"))
		keep = 2;
	/* github.com/u/r/v2/pkg is in module github.com/u/r/v2 (gopkg.in
	 * puts the major version in the element: yaml.v3). */
	if (keep > 0 && keep < nel && !tok_is(el[0], elen[0], "gopkg.in") &&
	    go_major(el[keep], elen[keep]))
		keep++;
	if (keep == 0 || keep >= nel)
		len = n;
	else
		len = (size_t)(el[keep] - s) - 1;
	found_add(f, s, len);
}

/* After import: "x", alias "x", or ( ... ) of those. */
static void
go_import(struct scan *s, struct found *f)
{
	const struct tok *p;
	struct tok t;

	if (!peek_punct(go_peek(s), '(')) {
		p = go_peek(s);
		if (p->type == T_NAME || peek_punct(p, '.'))
			go_get(s, &t);
		if (go_peek(s)->type == T_STRING) {
			go_get(s, &t);
			go_add(f, t.s, t.n);
		}
		return;
	}
	go_get(s, &t);
	for (;;) {
		p = go_peek(s);
		if (p->type == T_EOF || peek_punct(p, ')'))
			return;
		if (p->type == T_NAME && tok_is(p->s, p->n, "import"))
			return; /* unbalanced: let the caller start over */
		go_get(s, &t);
		if (t.type == T_STRING)
			go_add(f, t.s, t.n);
	}
}

static void
go_detect(const char *code, size_t len, struct found *f)
{
	struct scan s;
	struct tok t, prev;

	memset(&s, 0, sizeof s);
	memset(&prev, 0, sizeof prev);
	s.p = code;
	s.end = code + len;
	for (;;) {
		go_get(&s, &t);
		if (t.type == T_EOF || f->failed)
			return;
		if (peek_name(&t, "import") && !peek_punct(&prev, '.'))
			go_import(&s, f);
		prev = t;
	}
}

struct json_object *
deps_detect(const char *language, const char *code, size_t len)
{
	struct found f;

	if (language == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (code == NULL)
		len = 0;
	memset(&f, 0, sizeof f);
	if ((f.list = json_object_new_array()) == NULL ||
	    (f.seen = json_object_new_object()) == NULL) {
		json_object_put(f.list);
		errno = ENOMEM;
		return NULL;
	}
	if (strcmp(language, "python") == 0) {
		f.manager = "pip";
		py_detect(code, len, &f);
	} else if (strcmp(language, "javascript") == 0 ||
	           strcmp(language, "typescript") == 0) {
		f.manager = "npm";
		js_detect(code, len, &f);
	} else if (strcmp(language, "go") == 0) {
		f.manager = "go";
		go_detect(code, len, &f);
	} else if (strcmp(language, "bash") != 0) {
		json_object_put(f.list);
		json_object_put(f.seen);
		errno = EINVAL;
		return NULL;
	}
	json_object_put(f.seen);
	if (f.failed) {
		json_object_put(f.list);
		errno = ENOMEM;
		return NULL;
	}
	return f.list;
}

/* ------------------------------------------------------ name validation */

/* Length of the run at s of characters in set (or alnum when alnum). */
static size_t
span(const char *s, const char *set, int alnum)
{
	size_t n = 0;

	while (s[n] != '\0' &&
	       ((alnum && is_alnum(s[n])) || strchr(set, s[n]) != NULL))
		n++;
	return n;
}

/* PEP 508 name: alnum, inner . _ -, ending alnum. Returns its length. */
static size_t
pip_name(const char *s)
{
	size_t n;

	if (!is_alnum(s[0]))
		return 0;
	n = span(s, "._-", 1);
	while (n > 0 && !is_alnum(s[n - 1]))
		n--;
	return n;
}

/* name[extra,extra](op version)(,op version)* */
static int
valid_pip(const char *s)
{
	static const char *const ops[] = {
	    "===", "==", "!=", "<=", ">=", "~=", "<", ">"};
	size_t n, i, oplen;

	if ((n = pip_name(s)) == 0)
		return 0;
	s += n;
	if (*s == '[') {
		do {
			s++;
			if ((n = pip_name(s)) == 0)
				return 0;
			s += n;
		} while (*s == ',');
		if (*s++ != ']')
			return 0;
	}
	if (*s == '\0')
		return 1;
	for (;;) {
		for (i = 0, oplen = 0; i < NITEMS(ops); i++)
			if (strncmp(s, ops[i], strlen(ops[i])) == 0) {
				oplen = strlen(ops[i]);
				break;
			}
		if (oplen == 0)
			return 0;
		s += oplen;
		if (!is_digit(*s))
			return 0; /* PEP 440 versions start with a digit */
		s += span(s, "._+-", 1);
		if (s[-1] == '.' && *s == '*')
			s++; /* ==1.2.* */
		if (*s == '\0')
			return 1;
		if (*s++ != ',')
			return 0;
	}
}

/* An npm name or scope: lowercase, URL-safe, not starting with . or _. */
static size_t
npm_part(const char *s)
{
	size_t n;

	if (!(is_digit(s[0]) || (s[0] >= 'a' && s[0] <= 'z')))
		return 0;
	for (n = 0; s[n] != '\0'; n++)
		if (!(is_digit(s[n]) || (s[n] >= 'a' && s[n] <= 'z') ||
		        strchr("-._~", s[n]) != NULL))
			break;
	return n;
}

/* [@scope/]name[@version|@tag|@range] */
static int
valid_npm(const char *s)
{
	const char *name = s;
	size_t n;

	if (*s == '@') {
		if ((n = npm_part(s + 1)) == 0 || s[1 + n] != '/')
			return 0;
		s += 1 + n + 1;
	}
	if ((n = npm_part(s)) == 0)
		return 0;
	s += n;
	if ((size_t)(s - name) > 214 ||
	    (n == 12 && strncmp(s - n, "node_modules", n) == 0))
		return 0;
	if (*s == '\0')
		return 1;
	if (*s++ != '@')
		return 0;
	if (!(is_alnum(*s) || *s == '^' || *s == '~' || *s == '*'))
		return 0;
	return s[span(s, ".+-_^~*", 1)] == '\0';
}

/* host/path/elements[@version] */
static int
valid_go(const char *s)
{
	size_t n;
	int first = 1, dot;

	for (;;) {
		if (*s == '.' || *s == '-' || *s == '\0')
			return 0;
		n = first ? span(s, ".-", 1) : span(s, ".-_~+", 1);
		if (n == 0 || s[n - 1] == '.')
			return 0;
		if (first) {
			dot = memchr(s, '.', n) != NULL;
			if (!dot)
				return 0; /* std, cmd: not modules */
		}
		s += n;
		first = 0;
		if (*s == '/') {
			s++;
			continue;
		}
		break;
	}
	if (*s == '\0')
		return 1;
	if (*s++ != '@' || !is_alnum(*s))
		return 0;
	return s[span(s, "._+-", 1)] == '\0';
}

/* Debian name[=version] */
static int
valid_apt(const char *s)
{
	size_t n;

	if (!(is_digit(s[0]) || (s[0] >= 'a' && s[0] <= 'z')))
		return 0;
	for (n = 1; is_digit(s[n]) || (s[n] >= 'a' && s[n] <= 'z') ||
	            s[n] == '+' || s[n] == '.' || s[n] == '-';
	     n++)
		;
	if (n < 2)
		return 0;
	s += n;
	if (*s == '\0')
		return 1;
	if (*s++ != '=' || !is_digit(*s))
		return 0;
	return s[span(s, ".+~:-", 1)] == '\0';
}

int
deps_valid_name(const char *manager, const char *name)
{
	size_t i;

	if (manager == NULL || name == NULL || name[0] == '\0' ||
	    name[0] == '-')
		return 0;
	for (i = 0; name[i] != '\0'; i++) {
		unsigned char c = name[i];

		if (i >= VALID_MAX_LEN || c <= ' ' || c >= 0x7f ||
		    strchr(";&|`$()\\\"'{}#?", c) != NULL)
			return 0;
	}
	if (strcmp(manager, "pip") == 0)
		return valid_pip(name);
	if (strcmp(manager, "npm") == 0)
		return valid_npm(name);
	if (strcmp(manager, "go") == 0)
		return valid_go(name);
	if (strcmp(manager, "apt") == 0)
		return valid_apt(name);
	return 0;
}

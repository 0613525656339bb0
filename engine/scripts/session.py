# The Python code session's driver, run in the sandbox as
#   python3 -u -c <this file> NONCE ERROR_MAX
# by worker/interp.c (embedded at build time).  Each call comes on stdin as
# a decimal length, a newline and that many bytes of code; the code runs in
# one namespace kept between calls, the value of a last expression is
# printed, and the call ends with the marker line "\x1eMCPEND:" NONCE on
# stderr, then on stdout followed by the status as JSON: ok, exit (for
# SystemExit), error (the traceback, kept to ERROR_MAX characters, head and
# tail; the whole of a longer one goes to stderr first).
import ast, importlib, json, os, site, sys, traceback
nonce = sys.argv[1]
err_max = int(sys.argv[2])
ns = {'__name__': '__main__', '__builtins__': __builtins__}
inp = sys.stdin.buffer
sys.stdin = open(os.devnull)
sys.argv = ['']
while True:
    hdr = inp.readline()
    if not hdr:
        break
    code = inp.read(int(hdr)).decode('utf-8', 'replace')
    st = {'ok': True}
    try:
        u = site.getusersitepackages()
        if os.path.isdir(u) and u not in sys.path:
            site.addsitedir(u)
        importlib.invalidate_caches()
    except Exception:
        pass
    try:
        tree = ast.parse(code, '<code>', 'exec')
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, '<code>', 'exec'), ns)
        if last is not None:
            v = eval(compile(last, '<code>', 'eval'), ns)
            if v is not None:
                print(repr(v))
    except SystemExit as e:
        st = {'ok': e.code in (None, 0), 'exit': e.code if isinstance(e.code, int) else 1}
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != '<code>':
            tb = tb.tb_next
        err = ''.join(traceback.format_exception(type(e), e, tb))
        if len(err) > err_max:
            try:
                sys.stderr.write(err + '\n')
            except Exception:
                pass
            err = (err[:4096] + '\n[... %d characters cut (the error is kept to %d characters); the whole traceback is on stderr ...]\n' % (len(err) - err_max, err_max) + err[len(err) - err_max + 4096:])
        st = {'ok': False, 'error': err}
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    os.write(2, ('\x1eMCPEND:' + nonce + '\n').encode())
    os.write(1, ('\x1eMCPEND:' + nonce + json.dumps(st) + '\n').encode())

# The Python code session's driver, run in the sandbox as
#   python3 -u -c <this file> NONCE ERROR_MAX IMAGE_MAX
# by worker/interp.c (embedded at build time).  Each call comes on stdin as
# a decimal length, a newline and that many bytes of code; the code runs in
# one namespace kept between calls, the value of a last expression is
# printed, and the call ends with the marker line "\x1eMCPEND:" NONCE on
# stderr, then on stdout followed by the status as JSON: ok, exit (for
# SystemExit), error (the traceback, kept to ERROR_MAX characters, head and
# tail; the whole of a longer one goes to stderr first).
# Pictures, as a notebook shows them: matplotlib figures shown (plt.show)
# or still open when the call ends, and a PIL image or a figure that is
# the last expression's value, each as PNG on stdout before the marker,
# one line "\x1eMCPEND:" NONCE "IMG" JSON: {where, data (base64)}, or for
# one over IMAGE_MAX bytes {where, bytes, head (its first 4 KiB), path}:
# such a figure is saved in the output folder, $MCP_OUTPUT_DIR
# (/tmp/mcp-output unless set), as figure-K.png.  PNG and JPEG files the
# call wrote in that folder (new or changed, by name) come after, each with
# its path.  The worker checks every one; at most IMG_COUNT a call.
import ast, base64, importlib, io, json, os, site, sys, traceback, warnings
nonce = sys.argv[1]
err_max = int(sys.argv[2])
img_max = int(sys.argv[3])
IMG_COUNT = 8
os.environ['MPLBACKEND'] = 'Agg'
warnings.filterwarnings('ignore', '(Matplotlib is currently using agg|FigureCanvasAgg is non-interactive)')
imgs = []
out_dir = os.environ.get('MCP_OUTPUT_DIR') or '/tmp/mcp-output'
os.environ['MCP_OUTPUT_DIR'] = out_dir
try:
    os.makedirs(out_dir, exist_ok=True)
except OSError:
    pass
saved = [0]

def out_state():
    st = {}
    try:
        with os.scandir(out_dir) as it:
            for e in it:
                try:
                    if e.is_file(follow_symlinks=False):
                        s = e.stat(follow_symlinks=False)
                        st[e.name] = (s.st_mtime_ns, s.st_size)
                except OSError:
                    pass
    except OSError:
        pass
    return st

def out_take(before):
    for name, st in sorted(out_state().items()):
        if before.get(name) == st or len(imgs) > IMG_COUNT:
            continue
        path = os.path.join(out_dir, name)
        try:
            with open(path, 'rb') as f:
                data = f.read(img_max + 1)
        except OSError:
            continue
        size = len(data) if len(data) <= img_max else max(st[1], len(data))
        if data[:8] == b'\x89PNG\r\n\x1a\n' or data[:3] == b'\xff\xd8\xff':
            imgs.append(('file ' + name, data, path, size))

def wall(fd, b):
    while b:
        b = b[os.write(fd, b):]

def img_send(where, data, path, size):
    if path is None and len(data) > img_max:
        saved[0] += 1
        path = os.path.join(out_dir, 'figure-%d.png' % saved[0])
        try:
            with open(path, 'wb') as f:
                f.write(data)
        except OSError:
            path = None
    if size <= img_max:
        rec = {'where': where, 'data': base64.b64encode(data).decode()}
    else:
        rec = {'where': where, 'bytes': size, 'head': base64.b64encode(data[:4096]).decode()}
    if path is not None:
        rec['path'] = path
    wall(1, ('\x1eMCPEND:' + nonce + 'IMG' + json.dumps(rec) + '\n').encode())

def fig_png(fig):
    b = io.BytesIO()
    fig.savefig(b, format='png')
    return b.getvalue()

def figs_take():
    plt = sys.modules.get('matplotlib.pyplot')
    if plt is None:
        return
    for n in plt.get_fignums():
        data = fig_png(plt.figure(n))
        imgs.append(('figure %d' % n, data, None, len(data)))
    plt.close('all')

def show_patch():
    plt = sys.modules.get('matplotlib.pyplot')
    if plt is not None and not getattr(plt.show, 'mcp', False):
        def show(*a, **k):
            figs_take()
        show.mcp = True
        plt.show = show

def value_png(v):
    t = type(v)
    m = getattr(t, '__module__', '') or ''
    if m.startswith('PIL.') and hasattr(v, 'save') and hasattr(v, 'mode'):
        b = io.BytesIO()
        try:
            v.save(b, format='PNG')
        except (OSError, ValueError):
            b = io.BytesIO()
            v.convert('RGBA').save(b, format='PNG')
        return b.getvalue()
    if m.startswith('matplotlib.') and t.__name__ == 'Figure':
        data = fig_png(v)
        plt = sys.modules.get('matplotlib.pyplot')
        if plt is not None:
            plt.close(v)
        return data
    return None

def imgs_flush(before):
    try:
        figs_take()
    except Exception as e:
        sys.stderr.write('(figures could not be drawn: %r)\n' % e)
    out_take(before)
    try:
        sys.stdout.flush()
    except Exception:
        pass
    for where, data, path, size in imgs[:IMG_COUNT]:
        img_send(where, data, path, size)
    if len(imgs) > IMG_COUNT:
        sys.stderr.write('(more pictures not shown: at most %d a call)\n' % IMG_COUNT)
    del imgs[:]
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
    before = out_state()
    try:
        show_patch()
    except Exception:
        pass
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
            png = None
            if v is not None:
                try:
                    png = value_png(v)
                except Exception as e:
                    sys.stderr.write('(the value could not be drawn: %r)\n' % e)
            if png is not None:
                imgs.append(('last value', png, None, len(png)))
            elif v is not None:
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
        show_patch()
        imgs_flush(before)
    except BaseException:
        del imgs[:]
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    wall(2, ('\x1eMCPEND:' + nonce + '\n').encode())
    wall(1, ('\x1eMCPEND:' + nonce + json.dumps(st) + '\n').encode())

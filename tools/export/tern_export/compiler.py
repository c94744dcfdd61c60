"""Finding and running the `tern` compiler."""
import os
import shutil
import subprocess

from .errors import CompileError, TernNotFoundError

_CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def find_tern():
    """The `tern` executable: $TERN, else `tern` on PATH, else build/tern of this checkout.
    Raises TernNotFoundError listing every place tried."""
    tried = []
    env = os.environ.get("TERN")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        tried.append("$TERN=%s (not an executable file)" % env)
    else:
        tried.append("$TERN (not set)")
    on_path = shutil.which("tern")
    if on_path:
        return on_path
    tried.append("`tern` on PATH (not found)")
    local = os.path.join(_CHECKOUT, "build", "tern")
    if os.path.isfile(local) and os.access(local, os.X_OK):
        return local
    tried.append("%s (missing; build it with `make build`)" % local)
    raise TernNotFoundError("tern_export: cannot find the tern compiler; tried " + ", ".join(tried))


# What `tern compile` says when a --backend name is not in its build (partitioner.cpp).
UNKNOWN_BACKEND_MARK = "is not a registered backend compiler"


def run_compile(graph_json, out_path, tern=None, backends=(), extra_args=()):
    """Runs `tern compile graph_json -o out_path [--backend B ...] [EXTRA ...]`; returns its
    stdout (the arena report). `backends`: backend names, highest priority first ("portable"
    entries are dropped: the portable kernels are always the fallback). Raises CompileError
    carrying tern's stderr when it fails (an unknown backend: the message names the registered
    ones; a compiler killed by a signal: the message says which)."""
    tern = tern or find_tern()
    cmd = [tern, "compile", graph_json, "-o", out_path]
    for b in backends:
        if b != "portable":
            cmd += ["--backend", b]
    cmd += list(extra_args)
    r = subprocess.run(cmd,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        why = r.stderr.strip()
        if r.returncode < 0:
            # Killed: nothing on stderr (SIGKILL is what the kernel's OOM killer sends).
            why = ("%s\n" % why if why else "") + "tern compile was killed by signal %d%s" % (
                -r.returncode, " (out of memory?)" if r.returncode == -9 else "")
        raise CompileError("tern compile failed for %s:\n%s" % (graph_json, why),
                           stderr=r.stderr, graph_dir=os.path.dirname(graph_json))
    return r.stdout

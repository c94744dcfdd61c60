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


def run_compile(graph_json, out_path, tern=None):
    """Runs `tern compile graph_json -o out_path`; returns its stdout (the arena report).
    Raises CompileError carrying tern's stderr when it fails."""
    tern = tern or find_tern()
    r = subprocess.run([tern, "compile", graph_json, "-o", out_path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        raise CompileError("tern compile failed for %s:\n%s" % (graph_json, r.stderr.strip()),
                           stderr=r.stderr, graph_dir=os.path.dirname(graph_json))
    return r.stdout

"""Where the Python model tests put exported graphs and .pte files.

The zoo's largest files are hundreds of MB (wide_resnet50_2: 0.28 GB of weights) and a CI
machine's disk may be nearly full, so: $TERN_TEST_TMPDIR when set, else /dev/shm (memory) when it
has `min_free` bytes free and is writable, else None (the system's temporary directory).
"""
import os


def work_root(min_free=4 << 30):
    chosen = os.environ.get("TERN_TEST_TMPDIR")
    if chosen:
        return chosen
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize >= min_free and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    except OSError:
        pass
    return None

"""Running a call on one engine backend in the tests (physai.engine.set_backend), the previous one restored after."""

from physai import engine


def run(backend: str, f, *args, **kwargs):
    """f(*args, **kwargs) on `backend` ("native" or "numpy")."""
    previous = engine.set_backend(backend)
    try:
        return f(*args, **kwargs)
    finally:
        engine.set_backend(previous)

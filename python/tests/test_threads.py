# The GIL is released inside kernels and backward: while one Python thread runs a
# long matmul, another keeps running Python code.
import threading
import time

import ember


def longest_pause_while(fn):
    """Runs fn on a thread; returns (fn's duration, the longest gap in this thread's loop meanwhile)."""
    done = threading.Event()
    took = []

    def work():
        start = time.perf_counter()
        fn()
        took.append(time.perf_counter() - start)
        done.set()
    t = threading.Thread(target=work)
    last = time.perf_counter()
    longest = 0.0
    t.start()
    while not done.is_set():
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
    t.join()
    return took[0], longest


def test_matmul_releases_the_gil():
    a = ember.randn(1200, 1200)
    threads = ember.get_num_threads()
    ember.set_num_threads(1)  # one kernel thread: longer matmuls, and a core left for this loop
    try:
        duration, pause = longest_pause_while(lambda: [a @ a for _ in range(3)])
    finally:
        ember.set_num_threads(threads)
    assert duration > 0.05
    # Held, the loop would stop for a whole matmul (duration / 3); Python's switch interval is 5 ms.
    assert pause < duration / 6, f"main thread paused {pause:.3f} s of {duration:.3f} s"


def test_backward_releases_the_gil():
    x = ember.randn(1000, 1000, requires_grad=True)
    y = (x @ x @ x).sum()
    duration, pause = longest_pause_while(lambda: y.backward())
    assert pause < max(duration / 3, 0.02), f"main thread paused {pause:.3f} s of {duration:.3f} s"

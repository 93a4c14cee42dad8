#!/usr/bin/env python3
"""tools/plot_trace.py's time window: without --to the timeline ends at the last event's end in
milliseconds (it once took the microseconds of the trace as milliseconds and drew an empty
chart, every box squeezed into the first thousandth). Run by ctest: plot_trace_test.py TOOLS_DIR"""
import sys
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else "tools")
import plot_trace  # noqa: E402

# Two events of a trace (microseconds): 1 ms to 3 ms and 2 ms to 6.5 ms after the origin.
EVENTS = [{"ph": "X", "name": "all_reduce", "pid": 0, "ts": 1_000_000, "dur": 2000},
          {"ph": "X", "name": "step", "pid": 0, "ts": 1_001_000, "dur": 5500}]


class WindowTest(unittest.TestCase):
    def test_default_window_is_the_whole_trace_in_milliseconds(self):
        origin, start, end = plot_trace.window_ms(EVENTS)
        self.assertEqual(origin, 1_000_000)
        self.assertEqual(start, 0.0)
        self.assertAlmostEqual(end, 6.5)

    def test_from_and_to_are_kept_as_given(self):
        _, start, end = plot_trace.window_ms(EVENTS, 2.0, 4.0)
        self.assertEqual((start, end), (2.0, 4.0))

    def test_only_from_ends_at_the_last_event(self):
        _, start, end = plot_trace.window_ms(EVENTS, 1.5)
        self.assertEqual(start, 1.5)
        self.assertAlmostEqual(end, 6.5)


if __name__ == "__main__":
    unittest.main()

"""``python -m sample_traces.capture``: see :mod:`sample_traces.capture.capture`."""

from sample_traces.capture.capture import main

main()

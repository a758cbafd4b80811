"""The row layouts and codes the compiled timeline kernels share with Python: status codes, counter
and issue slots, and the columns of the event, metadata, span, tick and marker rows.

The kernels (:mod:`parsers.timeline._tokenize`, :mod:`parsers.timeline._pair`) are compiled by
Cython; a compiled module keeps its constants as C values, which Python cannot read, so Python
reads them here and the kernels copy them from here.
"""

from __future__ import annotations

# --- string flags (the lexer) -----------------------------------------------------------
F_UNESCAPED = 1  # a string held an unescaped quote
F_ESCAPE = 2  # a string held a backslash escape
F_FLOAT = 4  # a number had a fraction or an exponent
F_RANGE = 8  # a number beyond int64 (|v| > 2^63 - 1, or a float not within +-9.2e18): a ts or pid so is unreadable
#: the most digits the fast pass reads as a value (more go through the general parse's overflow check)
MAX_DIGITS = 18

# --- tokenizer status -------------------------------------------------------------------
ST_NEED_MORE = 0  # buffer ended between or inside records
ST_CLOSED = 1  # the closing ']' of the array was read
ST_FULL = 2  # an output array is full; take the rows and call again (the pairer too)
ST_SYNTAX = 3  # not the JSON this reader accepts, at outn[3]
ST_GROW = 4  # the intern table (tokenizer) or a state array (pairer) is too small; grow and call again
ST_DONE = 0  # the pairer applied every row

# --- tokenizer counters (ctr) -------------------------------------------------------------
T_LAST_TS = 0  # last ts seen (monotonicity check; int64 min = none)
T_RECORDS = 1  # complete records read
T_SEP_NL = 2  # separators between records that contain a newline
T_SEP_GLUED = 3  # separators without newline
T_FIRST_TS = 4  # first ts seen
T_FIRST_OFF = 5  # its record's offset (-1 = no ts seen yet)
T_AFTER = 6  # 1: records precede this range (its first separator counts as one)
T_NEXT_STR = 8  # next interned string id of category 0 (names); 9, 10: dtypes, shapes
T_NCTR = 12
CAT_NAME, CAT_DTYPE, CAT_SHAPE = 0, 1, 2

# --- issue counters (iss[k] = count, first offset) ---------------------------------
I_ORPHAN_E = 0  # E with no open B on its pid (pairer)
I_NEG_IN_OP = 1  # NEGOTIATE_* B while the pid's stack was not empty (#316) (pairer)
I_TICK_OUTSIDE = 2  # rank tick with no open NEGOTIATE_* on its pid (pairer)
I_UNESCAPED = 3  # string with an unescaped quote (tolerated)
I_FLOAT_TS = 4  # non-integer ts (rounded to us)
I_UNKNOWN_KEY = 5  # key Horovod does not write (ignored)
I_TS_BACK = 6  # ts smaller than the previous record's
I_UNKNOWN_PH = 7  # phase Horovod does not write (dropped)
I_BAD_RECORD = 8  # record without the fields its phase needs (dropped)
I_X_NOT_RANK = 9  # X event whose name is not a rank number (dropped)
I_E_NAMED = 10  # E carrying a name (0.9.2 writer)
I_FOREIGN_PH = 11  # a trace-event phase of other tools (counter, async, flow, object): skipped
I_NISS = 12

# --- event rows ---------------------------------------------------------------------
# EV_PH is the phase byte: B (66) -> A = name id, B = 1 if NEGOTIATE_*; E (69) -> A = dtype
# id, B = shape id (-1: none), C = numel (-1: no shape); X (88) -> A = rank; i (105) -> A =
# name id (no pid). Records that are dropped or metadata make no row.
EV_PH, EV_PID, EV_TS, EV_A, EV_B, EV_C, EV_OFF = range(7)
EV_N = 7
PH_B, PH_E, PH_X, PH_I = 66, 69, 88, 105
# other tools' trace-event phases: C counter, b/e/n async, s/t/f flow, N/O/D object, P sample, R/c marks
FOREIGN_PHASES = (67, 98, 101, 110, 115, 116, 102, 78, 79, 68, 80, 82, 99)

# --- metadata rows: the record's byte range in buf, for Python to decode ---------------
MT_START, MT_END, MT_PH, MT_FLAGS = range(4)
MT_N = 4

MISSING = -(2**62)  # an absent ts or pid

# --- pairer counters (ctr) ---------------------------------------------------------------
C_SPAN_ID = 0  # next span id
C_FREE = 1  # head of the slot free list (-1 = none)
C_SLOT_HW = 2  # slots ever used
C_NEED = 3  # with ST_GROW: 1 = pid arrays, 2 = slots
C_NEED_PID = 4  # with ST_GROW/1: the pid that did not fit
C_MAX_DEPTH = 5  # deepest stack seen (1-based)
C_TICKS = 6  # ticks emitted
C_NCTR = 8

# --- slot fields (open spans) ------------------------------------------------------
S_SPAN, S_TS, S_NAME, S_DEPTH, S_OP, S_OFF, S_PREV, S_NEG, S_TICKS, S_PID = range(10)
S_N = 10

# --- span rows ---------------------------------------------------------------------
SP_ID, SP_PID, SP_NAME, SP_DEPTH, SP_KIND, SP_START, SP_END, SP_PARENT, SP_OP = range(9)
SP_DTYPE, SP_SHAPE, SP_NUMEL, SP_SOFF, SP_EOFF = range(9, 14)
SP_N = 14
KIND_NEGOTIATE, KIND_OP, KIND_ACTIVITY = 0, 1, 2

# --- tick rows / marker rows ------------------------------------------------------------
TK_PID, TK_NEG, TK_RANK, TK_TS, TK_ORDER, TK_OFF = range(6)
TK_N = 6
MK_NAME, MK_TS, MK_OFF = range(3)
MK_N = 3

# --- per-pid statistics ------------------------------------------------------------
P_NEG, P_TICKED, P_OPS, P_FIRST_TS, P_OPNAME = range(5)
P_N = 5

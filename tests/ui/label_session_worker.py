"""A Label page driven by AppTest in its own process, for the durability test.

`python label_session_worker.py SESSION REVIEWER` (MEMLENS_DATA_DIR set by the
caller) opens the Label page as REVIEWER on SESSION and presses the shortcut-bound
buttons (relevant, not relevant, skip in turn) until the session is done. After
each press has returned, that is once the page has acknowledged it, it prints
`ACK <message_id> <memory_id> <action>`. The test kills this process with SIGKILL
part-way through.
"""

import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the page imports dashboard.*

PAGE = str(ROOT / "dashboard" / "views" / "label.py")
BUTTONS = ("label_relevant", "label_not_relevant", "label_skip")


def main() -> int:
    session, reviewer = sys.argv[1], sys.argv[2]
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["label_reviewer"] = reviewer
    at.session_state["label_session"] = session
    at.run()
    presses = 0
    while True:
        try:
            button = at.button(key=BUTTONS[presses % len(BUTTONS)])
        except KeyError:
            break  # no current row: the session is done
        button.click().run()
        if at.exception:
            print(f"ERROR {at.exception[0].message}", flush=True)
            return 1
        step = at.session_state["label_undo_steps"][-1]
        print(f"ACK {step.message_id} {step.memory_id} {step.action}", flush=True)
        presses += 1
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

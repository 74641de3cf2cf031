"""A shared link's first view (dashboard/ui/held_controls.py): what reaches the browser."""

from __future__ import annotations

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from dashboard.ui.held_controls import as_placeholder


def element(path: list[int], kind: str) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path[:] = path
    getattr(msg.delta.new_element, kind).SetInParent()
    return msg


def block(path: list[int], kind: str) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path[:] = path
    getattr(msg.delta.add_block, kind).SetInParent()
    return msg


def sent(msg: ForwardMsg) -> str:
    as_placeholder(msg)
    return kind_of(msg)


def kind_of(msg: ForwardMsg) -> str:
    """The kind of element or block the message carries."""
    delta = msg.delta
    kind = delta.WhichOneof("type")
    assert kind is not None
    return getattr(delta, kind).WhichOneof("type") or ""


def test_a_control_becomes_an_empty_place_at_the_same_path():
    msg = element([0, 4, 0], "slider")
    assert sent(msg) == "empty"
    assert list(msg.metadata.delta_path) == [0, 4, 0]  # the browser refuses a gap in a block


def test_a_held_widget_names_its_key_so_the_next_run_can_send_its_value():
    msg = element([1, 3], "number_input")
    msg.delta.new_element.number_input.id = "$$ID-0123abcd-k"
    assert as_placeholder(msg) == "k" and kind_of(msg) == "empty"
    # A button's value cannot be set from code: its key is not named.
    button = element([0, 2, 1], "button")
    button.delta.new_element.button.id = "$$ID-4567ef01-FormSubmitter:query_form-Search"
    assert as_placeholder(button) is None and kind_of(button) == "empty"


def test_the_result_reaches_the_browser_as_it_is():
    for kind in ("metric", "markdown", "heading", "alert", "bidi_component"):
        assert sent(element([0, 5, 1], kind)) == kind


def test_everything_in_the_sidebar_is_an_empty_place_and_its_blocks_plain():
    assert sent(element([1, 2], "markdown")) == "empty"
    assert sent(block([1, 1], "expandable")) == "flex_container"


def test_the_query_form_is_a_plain_block_and_other_blocks_stay():
    assert sent(block([0, 2], "form")) == "flex_container"
    assert sent(block([0, 4, 1], "column")) == "column"


def test_messages_that_are_not_elements_pass_untouched():
    msg = ForwardMsg()
    msg.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    before = msg.SerializeToString()
    as_placeholder(msg)
    assert msg.SerializeToString() == before

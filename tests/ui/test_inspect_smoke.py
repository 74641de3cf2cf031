from demo_questions import PIZZA


def test_pizza_query_drops_everything_under_default_floor(app):
    at = app()
    at.run()
    at.text_input(key="query").input(PIZZA)
    at.button(key="FormSubmitter:query_form-Search").click().run()
    assert not at.exception
    assert at.session_state["store_calls"] == 1
    assert at.code[0].value.startswith("No stored memory is relevant")

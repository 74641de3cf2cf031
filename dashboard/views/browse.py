"""Browse: a user's memories in any store, and "is the memory I expected stored at all?"."""

from __future__ import annotations

import streamlit as st

from dashboard.ui.pages import browse as view
from dashboard.ui.widgets.access import require_access
from dashboard.ui.widgets.errors import show_store_error
from dashboard.ui.widgets.sidebar import store_picker, user_picker, warm_model

st.title("Browse a store")
require_access()  # the page shows memory text
st.caption("List what a store holds for a user, and check whether the memory a retrieval missed was ever stored.")

choice = store_picker()
view.restore_user_from_url()
user = user_picker(choice.store)
warm_model(choice.name)
view.sync_url(choice, user)

if choice.error:
    show_store_error(choice.error)
    st.stop()

view.show_expected_check(choice, user)
view.show_listing(choice, user)
view.show_history(choice)

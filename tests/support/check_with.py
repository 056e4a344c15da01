"""`torch._check_with` as 2.13 wrote it, and the edit 2.14 made to it (a message that is not
callable is formatted where 2.13 raised TypeError): shared by the tests of edits that matter
only for some values (selection.python.specialize, selection.links.argument_reach)."""

CHECK_WITH_213 = """
def _check_with(error_type, cond, message):
    if not isinstance(cond, (bool, SymBool)):
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if expect_true(cond):
        return
    if message is None:
        message_evaluated = "Expected cond to be True, but got False."
    else:
        if not callable(message):
            raise TypeError("message must be a callable")
        message_evaluated = str(message())
    raise error_type(message_evaluated)
"""
RAISED = """        if not callable(message):
            raise TypeError("message must be a callable")
        message_evaluated = str(message())"""
FORMATTED = """        message_evaluated = str(message() if callable(message) else message)"""
CHECK_WITH_214 = CHECK_WITH_213.replace(RAISED, FORMATTED)

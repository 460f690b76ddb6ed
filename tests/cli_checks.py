"""The bad-input contract every command keeps: exit code 2 and one sentence on stderr, no traceback."""


def assert_one_sentence_failure(result, *fragments: str) -> str:
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert message.startswith("error: ") and "\n" not in message, message
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in message, message
    return message

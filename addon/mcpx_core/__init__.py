"""mcpx's library: framing, sessions, downgrade rules, change records and the mitmproxy addons."""

#: mcpx's version (pyproject.toml reads it from here); printed in the start-up line
__version__ = "0.1.0"

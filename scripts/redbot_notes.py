#!/usr/bin/env python3
"""The notes REDbot (PyPI `redbot`, lint for HTTP) draws on one request, one per line:
NOTE_ID<TAB>LEVEL<TAB>SUMMARY. For scripts/redbot-check.sh.

Usage: redbot_notes.py URL [METHOD [HEADER: VALUE ...]]

REDbot's own CLI (`redbot URL`) checks a GET with no request headers; this runs the same check
(HttpResource with its active checks: ranges, If-None-Match, If-Modified-Since, gzip) on any
method and headers, e.g. HEAD or a GET with Range. Exit 2 when REDbot got no complete response.
"""

import sys
from configparser import ConfigParser

import thor
from redbot.resource import HttpResource


def main() -> int:
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    url, method = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "GET")
    headers = [tuple(part.strip() for part in h.split(":", 1)) for h in sys.argv[3:]]
    config = ConfigParser()
    config.read_dict({"redbot": {"enable_local_access": "True"}})  # as REDbot's CLI: loopback is allowed
    resource = HttpResource(config["redbot"])
    resource.set_request(url, method, headers)

    @thor.events.on(resource)
    def check_done() -> None:
        thor.stop()

    resource.check()
    thor.run()
    if not resource.response.complete:
        sys.stderr.write(f"redbot_notes.py: no complete response from {url}: {resource.fetch_error}\n")
        return 2
    for note in resource.response.notes:
        summary = " ".join(str(note.summary).split())
        print(f"{note.__class__.__name__}\t{note.level.name}\t{summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

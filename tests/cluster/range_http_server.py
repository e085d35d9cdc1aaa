#!/usr/bin/python3
"""A static HTTP server for zkfarm tests that honours Range requests.

Serves DIR on 127.0.0.1:PORT (GET and HEAD). A "Range: bytes=K-" or
"bytes=K-L" request gets 206 Partial Content with Content-Range; a range
past the end gets 416. With --cut PATH:N the first GET of PATH announces the
whole length, sends N bytes of the body and closes the connection (a broken
transfer); later GETs of PATH are served in full. With --fill-after
PATH:N:FILE the first GET of PATH sends N bytes, then writes FILE until its
filesystem is full (another writer taking the disk mid-transfer), then sends
the rest. With --trickle PATH:RATE every GET of PATH sends its headers at
once and its body at RATE bytes a second (a witness server slow enough to
stall a reader, yet above curl's 1 KiB/s stall limit).

Every request is logged to stderr as one line:
  request GET /path range=bytes=K- (or range=none)
  served /path status=206 bytes=K-L/SIZE   or   cut /path after N bytes

Standard library only (Debian's python3).
"""

import argparse
import errno
import http.server
import os
import re
import sys
import threading
import time
import urllib.parse


def fill_filesystem(path):
    """Writes `path` until its filesystem has no room left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    chunk = b"\0" * 4096
    try:
        while True:
            os.write(fd, chunk)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--directory", required=True)
    parser.add_argument("--cut", action="append", default=[], help="PATH:N")
    parser.add_argument("--fill-after", action="append", default=[], help="PATH:N:FILE")
    parser.add_argument("--trickle", action="append", default=[], help="PATH:BYTES_PER_SECOND")
    args = parser.parse_args()
    root = os.path.realpath(args.directory)
    cuts = {}
    for spec in args.cut:
        path, _, count = spec.rpartition(":")
        cuts[path] = int(count)
    fills = {}
    for spec in args.fill_after:
        path, count, filler = spec.split(":", 2)
        fills[path] = (int(count), filler)
    trickles = {}
    for spec in args.trickle:
        path, _, rate = spec.rpartition(":")
        trickles[path] = int(rate)
    lock = threading.Lock()

    def log(line):
        with lock:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 (the base class's name)
            pass

        def do_HEAD(self):
            self.serve(body=False)

        def do_GET(self):
            self.serve(body=True)

        def serve(self, body):
            url_path = urllib.parse.urlsplit(self.path).path
            wanted = self.headers.get("Range")
            log("request %s %s range=%s" % (self.command, url_path, wanted or "none"))
            local = os.path.realpath(os.path.join(root, urllib.parse.unquote(url_path).lstrip("/")))
            if not local.startswith(root + os.sep) or not os.path.isfile(local):
                self.send_error(404)
                return
            with open(local, "rb") as f:
                data = f.read()
            size = len(data)
            start, end, status = 0, size - 1, 200
            if wanted:
                match = re.fullmatch(r"bytes=(\d+)-(\d*)", wanted.strip())
                if not match:
                    self.send_error(400, "bad Range header")
                    return
                start = int(match.group(1))
                if match.group(2):
                    end = min(int(match.group(2)), size - 1)
                if start >= size or start > end:
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % size)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    log("served %s status=416" % url_path)
                    return
                status = 206
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(end - start + 1))
            if status == 206:
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
            self.end_headers()
            if not body:
                return
            with lock:
                cut = cuts.pop(url_path, None) if self.command == "GET" else None
            if cut is not None:
                self.wfile.write(data[start:start + cut])
                self.wfile.flush()
                self.close_connection = True
                log("cut %s after %d bytes" % (url_path, cut))
                return
            with lock:
                fill = fills.pop(url_path, None) if self.command == "GET" else None
            if fill is not None:
                count, filler = fill
                self.wfile.write(data[start:start + count])
                self.wfile.flush()
                fill_filesystem(filler)
                log("filled %s after %d bytes of %s" % (filler, count, url_path))
                start += count
            rate = trickles.get(url_path) if self.command == "GET" else None
            if rate is not None:
                log("trickling %s at %d bytes/s" % (url_path, rate))
                chunk = max(1, rate // 10)
                try:
                    while start <= end:
                        self.wfile.write(data[start:min(start + chunk, end + 1)])
                        self.wfile.flush()
                        start += chunk
                        time.sleep(0.1)
                except (BrokenPipeError, ConnectionResetError):
                    log("client left %s" % url_path)
                    return
                log("served %s status=%d trickled/%d" % (url_path, status, size))
                return
            self.wfile.write(data[start:end + 1])
            log("served %s status=%d bytes=%d-%d/%d" % (url_path, status, start, end, size))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()

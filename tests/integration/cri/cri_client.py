#!/usr/bin/python3
"""hull's CRI test client: one CRI call against a containerd CRI endpoint.

    cri_client.py --endpoint unix:///path/containerd.sock METHOD [REQUEST_JSON]
    cri_client.py --encode MESSAGE [JSON]

METHOD is a runtime.v1 RuntimeService or ImageService method (RunPodSandbox,
ExecSync, PullImage, ...). REQUEST_JSON is the request message in protobuf's
JSON mapping (lowerCamelCase or the .proto field names); "-" reads it from
standard input; omitted means an empty request. The response is printed as
JSON (field names as in the .proto, default values included) and the exit
code is 0. A failed call prints "CODE: details" on standard error and exits 1;
bad arguments exit 2. With --time, the call's own duration (from the
connected channel's send to the answer, without Python's start) goes to
standard error as call_ms=N. --encode prints the runtime.v1 MESSAGE given as JSON
in protobuf's binary encoding, base64-encoded (tests feed the same
PodSandboxConfig to containerd and to hull's own spec builder).

The messages come from proto/cri/runtime/v1/api.proto, compiled by protoc
--python_out at build time (PYTHONPATH names the output); the calls go
through grpcio's generic channel methods, so no generated service code is
needed. Debian: python3-grpcio, python3-protobuf.
"""

import argparse
import base64
import sys
import time

import grpc
from google.protobuf import json_format

from cri.runtime.v1 import api_pb2

# Methods served by runtime.v1.ImageService; every other is RuntimeService's.
IMAGE_METHODS = {"ListImages", "ImageStatus", "PullImage", "RemoveImage", "ImageFsInfo"}


def message_class(name):
    cls = getattr(api_pb2, name, None)
    if cls is None:
        raise KeyError(name)
    return cls


def read_json(text):
    return sys.stdin.read() if text == "-" else text


def encode(name, text):
    try:
        message = message_class(name)()
    except KeyError:
        print(f"unknown CRI message {name!r}", file=sys.stderr)
        return 2
    try:
        json_format.Parse(read_json(text), message)
    except json_format.ParseError as err:
        print(f"bad {name} JSON: {err}", file=sys.stderr)
        return 2
    print(base64.b64encode(message.SerializeToString()).decode("ascii"))
    return 0


def main():
    parser = argparse.ArgumentParser(description="one CRI call")
    parser.add_argument("--endpoint", help="unix:///path/to/containerd.sock")
    parser.add_argument("--encode", metavar="MESSAGE", help="encode a message instead of calling")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds")
    parser.add_argument("--time", action="store_true",
                        help="print call_ms=<the gRPC call alone, in ms> on standard error")
    parser.add_argument("method", nargs="?")
    parser.add_argument("request", nargs="?", default="{}")
    args = parser.parse_args()

    if args.encode:
        return encode(args.encode, args.method or "{}")
    if not args.endpoint or not args.method:
        parser.error("--endpoint and METHOD are required")

    try:
        request_cls = message_class(args.method + "Request")
        response_cls = message_class(args.method + "Response")
    except KeyError as missing:
        print(f"unknown CRI method {args.method!r} (no message {missing})", file=sys.stderr)
        return 2
    text = read_json(args.request)
    request = request_cls()
    try:
        json_format.Parse(text, request)
    except json_format.ParseError as err:
        print(f"bad {args.method}Request JSON: {err}", file=sys.stderr)
        return 2

    service = "ImageService" if args.method in IMAGE_METHODS else "RuntimeService"
    with grpc.insecure_channel(args.endpoint) as channel:
        call = channel.unary_unary(
            f"/runtime.v1.{service}/{args.method}",
            request_serializer=request_cls.SerializeToString,
            response_deserializer=response_cls.FromString,
        )
        if args.time:
            # The channel connects on the first call: time it once connected.
            try:
                grpc.channel_ready_future(channel).result(timeout=args.timeout)
            except grpc.FutureTimeoutError:
                print(f"UNAVAILABLE: cannot connect to {args.endpoint}", file=sys.stderr)
                return 1
        started = time.monotonic()
        try:
            response = call(request, timeout=args.timeout)
        except grpc.RpcError as err:
            print(f"{err.code().name}: {err.details()}", file=sys.stderr)
            return 1
        if args.time:
            print(f"call_ms={(time.monotonic() - started) * 1000:.1f}", file=sys.stderr)
    print(json_format.MessageToJson(response, preserving_proto_field_name=True,
                                    including_default_value_fields=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""hull's containerd API test client: one call of containerd's own gRPC API.

    containerd_client.py --endpoint unix:///path/containerd.sock \\
        [--namespace NS] SERVICE METHOD [REQUEST_JSON]

This is what containerd's Go client does for NewTask, Start, Kill, Wait,
Update and Delete, one call per run, so that a test can drive steps `ctr`
cannot (a task created and never started, Update before Start, the runctypes
CreateOptions WithShimCgroup sends). SERVICE is `tasks`
(containerd.services.tasks.v1.Tasks) or `snapshots`
(containerd.services.snapshots.v1.Snapshots); METHOD one of its calls.

REQUEST_JSON is the request in protobuf's JSON mapping ("-" reads it from
standard input). An Any field takes {"@type": "containerd.linux.runc.
CreateOptions", ...fields} for a message this client knows, or
{"@type_url": URL, "@value_text": TEXT} for a payload given as text (OCI
LinuxResources JSON for Update). The response is printed as JSON (.proto
field names, defaults included) with exit code 0; a failed call prints
"CODE: details" on standard error and exits 1; bad arguments exit 2.

The messages come from tests/integration/containerd_api/proto and hull's own
proto/ (Mount, runctypes), compiled by protoc --python_out at build time
(PYTHONPATH names the output); calls go through grpcio's generic channel
methods. Debian: python3-grpcio, python3-protobuf.
"""

import argparse
import json
import sys

import grpc
from google.protobuf import json_format, symbol_database

from containerd.linux.runc import runctypes_pb2  # noqa: F401 (Any payloads)
from containerd.services.snapshots.v1 import snapshots_pb2
from containerd.services.tasks.v1 import tasks_pb2

SERVICES = {
    "tasks": tasks_pb2.DESCRIPTOR.services_by_name["Tasks"],
    "snapshots": snapshots_pb2.DESCRIPTOR.services_by_name["Snapshots"],
}


def message_class(descriptor):
    return symbol_database.Default().GetSymbol(descriptor.full_name)


def take_raw_anys(fields):
    """Removes {"@type_url", "@value_text"} Any values from the top level."""
    raw = {}
    for name, value in list(fields.items()):
        if isinstance(value, dict) and "@type_url" in value:
            raw[name] = (value["@type_url"], value.get("@value_text", "").encode())
            del fields[name]
    return raw


def main():
    parser = argparse.ArgumentParser(description="one containerd API call")
    parser.add_argument("--endpoint", required=True, help="unix:///path/to/containerd.sock")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds")
    parser.add_argument("service", choices=sorted(SERVICES))
    parser.add_argument("method")
    parser.add_argument("request", nargs="?", default="{}")
    args = parser.parse_args()

    method = SERVICES[args.service].methods_by_name.get(args.method)
    if method is None:
        print(f"unknown {args.service} method {args.method!r}", file=sys.stderr)
        return 2
    request_cls = message_class(method.input_type)
    response_cls = message_class(method.output_type)
    text = sys.stdin.read() if args.request == "-" else args.request
    try:
        fields = json.loads(text)
        raw = take_raw_anys(fields)
        request = request_cls()
        json_format.ParseDict(fields, request)
        for name, (type_url, value) in raw.items():
            getattr(request, name).type_url = type_url
            getattr(request, name).value = value
    except (ValueError, json_format.ParseError) as err:
        print(f"bad {method.input_type.name} JSON: {err}", file=sys.stderr)
        return 2

    with grpc.insecure_channel(args.endpoint) as channel:
        call = channel.unary_unary(
            f"/{method.containing_service.full_name}/{method.name}",
            request_serializer=request_cls.SerializeToString,
            response_deserializer=response_cls.FromString,
        )
        try:
            response = call(request, timeout=args.timeout,
                            metadata=[("containerd-namespace", args.namespace)])
        except grpc.RpcError as err:
            print(f"{err.code().name}: {err.details()}", file=sys.stderr)
            return 1
    print(json_format.MessageToJson(response, preserving_proto_field_name=True,
                                    including_default_value_fields=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Writes the .proto files of a TensorFlow GraphDef from the tensorflow-cpu wheel.

The wheel ships no .proto sources, only the _pb2 modules; each holds its file's
FileDescriptorProto, from which the schema is printed back as .proto text
(comments are not in the descriptors). Run from this folder:

    pip install tensorflow-cpu==2.21.0
    python extract_protos.py

It then compiles the files with protoc and checks that their descriptors equal
the wheel's, so the printed schema is the one TensorFlow reads and writes.
"""
import importlib
import os
import subprocess
import tempfile

from google.protobuf import descriptor_pb2, descriptor_pool

ROOT = "tensorflow/core/framework/graph.proto"
FD = descriptor_pb2.FieldDescriptorProto
SCALARS = {number: name[5:].lower() for name, number in FD.Type.items()
           if name not in ("TYPE_MESSAGE", "TYPE_ENUM", "TYPE_GROUP")}


def load(name):
    importlib.import_module(name[:-len(".proto")].replace("/", ".") + "_pb2")
    proto = descriptor_pb2.FileDescriptorProto()
    descriptor_pool.Default().FindFileByName(name).CopyToProto(proto)
    return proto


def closure(root):
    files, todo = {}, [root]
    while todo:
        name = todo.pop()
        if name not in files:
            files[name] = load(name)
            todo += files[name].dependency
    return files


def value(v, field):
    if field.type == field.TYPE_BOOL:
        return "true" if v else "false"
    if field.type == field.TYPE_STRING:
        return '"%s"' % v
    if field.type == field.TYPE_ENUM:
        return field.enum_type.values_by_number[v].name
    return str(v)


def options(opts):
    return [(f.name, value(v, f)) for f, v in opts.ListFields()]


def type_of(f):
    return SCALARS[f.type] if f.type in SCALARS else f.type_name


def field_line(f, syntax, entries):
    opts = options(f.options)
    if f.HasField("default_value"):
        opts.insert(0, ("default", f.default_value if f.type != f.TYPE_STRING
                        else '"%s"' % f.default_value))
    suffix = " [%s]" % ", ".join("%s = %s" % o for o in opts) if opts else ""
    if f.type_name in entries:
        key, val = entries[f.type_name].field
        return "map<%s, %s> %s = %d%s;" % (type_of(key), type_of(val), f.name, f.number, suffix)
    label = {f.LABEL_REPEATED: "repeated ", f.LABEL_REQUIRED: "required "}.get(f.label, "")
    if f.label == f.LABEL_OPTIONAL and (syntax == "proto2" or f.proto3_optional):
        label = "optional "
    return "%s%s %s = %d%s;" % (label, type_of(f), f.name, f.number, suffix)


def enum(e, ind):
    out = ["%senum %s {" % (ind, e.name)]
    out += ["%s  option %s = %s;" % (ind, *o) for o in options(e.options)]
    for v in e.value:
        opts = options(v.options)
        suffix = " [%s]" % ", ".join("%s = %s" % o for o in opts) if opts else ""
        out.append("%s  %s = %d%s;" % (ind, v.name, v.number, suffix))
    return out + [ind + "}"]


def reserved(m, ind):
    out = []
    for r in m.reserved_range:
        end = "max" if r.end >= 1 << 29 else str(r.end - 1)
        out.append("%s  reserved %s;" % (ind, r.start if r.end == r.start + 1 else "%d to %s" % (r.start, end)))
    out += ['%s  reserved "%s";' % (ind, n) for n in m.reserved_name]
    return out


def message(m, scope, syntax, ind):
    name = scope + "." + m.name
    entries = {name + "." + n.name: n for n in m.nested_type if n.options.map_entry}
    out = ["%smessage %s {" % (ind, m.name)]
    out += ["%s  option %s = %s;" % (ind, *o) for o in options(m.options)]
    out += reserved(m, ind)
    fields = list(m.field)
    real_oneof = [not any(f.proto3_optional for f in m.field if f.HasField("oneof_index")
                          and f.oneof_index == i) for i in range(len(m.oneof_decl))]

    def emit_fields(until):
        # a map field declares its entry type where it stands: print the
        # fields up to it before the nested types that follow its entry
        while fields:
            f = fields.pop(0)
            if f.HasField("oneof_index") and real_oneof[f.oneof_index]:
                i = f.oneof_index
                out.append("%s  oneof %s {" % (ind, m.oneof_decl[i].name))
                out.append("%s    %s" % (ind, field_line(f, syntax, entries)))
                while fields and fields[0].HasField("oneof_index") and fields[0].oneof_index == i:
                    out.append("%s    %s" % (ind, field_line(fields.pop(0), syntax, entries)))
                out.append(ind + "  }")
            else:
                out.append("%s  %s" % (ind, field_line(f, syntax, entries)))
            if until is not None and f.type_name == until:
                return

    for n in m.nested_type:
        if n.options.map_entry:
            emit_fields(name + "." + n.name)
        else:
            out += message(n, name, syntax, ind + "  ")
    emit_fields(None)
    for e in m.enum_type:
        out += enum(e, ind + "  ")
    return out + [ind + "}"]


def proto_text(p):
    syntax = p.syntax or "proto2"
    out = ["// Printed by extract_protos.py from the descriptor in tensorflow-cpu's "
           "%s_pb2.py." % os.path.basename(p.name)[:-len(".proto")], "",
           'syntax = "%s";' % syntax, "", "package %s;" % p.package, ""]
    out += ['import "%s";' % d for d in p.dependency] + ([""] if p.dependency else [])
    out += ["option %s = %s;" % o for o in options(p.options)] + [""]
    for m in p.message_type:
        out += message(m, "." + p.package, syntax, "") + [""]
    for e in p.enum_type:
        out += enum(e, "") + [""]
    return "\n".join(out).rstrip() + "\n"


def main():
    files = closure(ROOT)
    for name, proto in sorted(files.items()):
        os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(name, "w") as f:
            f.write(proto_text(proto))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        subprocess.run(["protoc", "-I.", "--include_imports", "-o", out, *sorted(files)], check=True)
        compiled = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            compiled.ParseFromString(f.read())
    for proto in compiled.file:
        for m in proto.message_type:
            strip_json_names(m)
        assert proto == files[proto.name], "printed %s differs from the wheel's" % proto.name
    print("%d files; descriptors equal the wheel's" % len(files))


def strip_json_names(m):
    for f in m.field:
        f.ClearField("json_name")
    for n in m.nested_type:
        strip_json_names(n)


if __name__ == "__main__":
    main()

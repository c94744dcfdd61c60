#!/usr/bin/env python3
"""Checks that the table-driven FlatBuffer verifier (runtime/executor/flatbuffer_verifier.cpp)
lists every field of every table of schema/program.fbs, in schema order, and every table.

The verifier's field list is written by hand; a field added to the schema but not to the list
would be read by the runtime without its bounds ever being checked. flatbuffer_verifier_test
only notices such a field when a sample program sets it, so this check reads both files and
compares them. Exit status 0 when they agree; otherwise one line per difference.

  scripts/check-verifier-fields.py [--self-test]
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def schema_tables(fbs_text):
    """{table: [field, ...]} in declaration order; a union-typed field contributes its
    `<name>_type` field first, as flatc's generated code does."""
    text = strip_comments(fbs_text)
    unions = set(re.findall(r"\bunion\s+(\w+)\s*\{", text))
    tables = {}
    for name, body in re.findall(r"\btable\s+(\w+)\s*\{([^}]*)\}", text):
        fields = []
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            m = re.match(r"(\w+)\s*:\s*([\w\[\]\.]+)", decl)
            if not m:
                raise ValueError("cannot read field %r of table %s" % (decl, name))
            if "(deprecated)" in decl.replace(" ", ""):
                continue
            field, ftype = m.group(1), m.group(2)
            if ftype in unions:
                fields.append(field + "_type")
            fields.append(field)
        tables[name] = fields
    return tables


def verifier_tables(cpp_text):
    """{table: [field, ...]} from the kFields initialiser's `{fb::Table::VT_FIELD, ...}` rows."""
    m = re.search(r"kFields\[\]\s*=\s*\{(.*?)\n\};", cpp_text, re.S)
    if not m:
        raise ValueError("no kFields[] initialiser found")
    tables = {}
    for table, field in re.findall(r"\{\s*fb::(\w+)::VT_(\w+)\s*,", m.group(1)):
        tables.setdefault(table, []).append(field.lower())
    return tables


def compare(schema, verifier):
    problems = []
    for table, fields in schema.items():
        if not fields:
            continue  # a table without fields has no rows (e.g. None)
        listed = verifier.get(table)
        if listed is None:
            problems.append("table %s (%d fields) is not in the verifier's field list" %
                            (table, len(fields)))
            continue
        if listed != fields:
            missing = [f for f in fields if f not in listed]
            extra = [f for f in listed if f not in fields]
            detail = []
            if missing:
                detail.append("missing %s" % ", ".join(missing))
            if extra:
                detail.append("not in the schema: %s" % ", ".join(extra))
            if not detail:
                detail.append("order differs: schema %s, verifier %s" % (fields, listed))
            problems.append("table %s: %s" % (table, "; ".join(detail)))
    for table in verifier:
        if table not in schema:
            problems.append("verifier lists table %s, which the schema does not have" % table)
    return problems


def self_test():
    fbs = """
    union U { A, B }
    table A { x: int; y: [long]; }  // comment: z: int;
    table B {}
    table C { u: U; name: string; old: int (deprecated); }
    """
    schema = schema_tables(fbs)
    assert schema == {"A": ["x", "y"], "B": [], "C": ["u_type", "u", "name"]}, schema
    cpp = """constexpr Field kFields[] = {
        {fb::A::VT_X, kScalar, 4},
        {fb::A::VT_Y, kVector, 8},
        {fb::C::VT_U_TYPE, kScalar, 1},
        {fb::C::VT_U, kUnion, 0},
        {fb::C::VT_NAME, kString, 0},
    \n};"""
    assert compare(schema, verifier_tables(cpp)) == []
    missing = cpp.replace("{fb::C::VT_NAME, kString, 0},", "")
    assert compare(schema, verifier_tables(missing)) == ["table C: missing name"]
    assert compare(dict(schema, D=["q"]), verifier_tables(cpp)) == [
        "table D (1 fields) is not in the verifier's field list"]
    print("check-verifier-fields: self-test passed")
    return 0


def main(argv):
    if "--self-test" in argv:
        return self_test()
    with open(os.path.join(ROOT, "schema", "program.fbs")) as f:
        schema = schema_tables(f.read())
    with open(os.path.join(ROOT, "runtime", "executor", "flatbuffer_verifier.cpp")) as f:
        verifier = verifier_tables(f.read())
    problems = compare(schema, verifier)
    for p in problems:
        print("check-verifier-fields: " + p)
    if problems:
        print("check-verifier-fields: update kFields (and kFirstField, the table ids) in "
              "runtime/executor/flatbuffer_verifier.cpp to match schema/program.fbs")
        return 1
    print("check-verifier-fields: %d tables, %d fields: the verifier lists them all" %
          (len(schema), sum(len(v) for v in schema.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The Python surface agrees with the option schema (src/stoker/config/options.cc): every argument
of Loader(...) and serve(...) named in the signature and in __init__.pyi is a schema option of that
entry point, with the schema's default (or None where the schema allows None for "the default"),
and with an annotation of the option's type; the docstrings list every option. Adding an option
to the schema needs no edit here: options outside the signature are keyword arguments too."""
import ast
import inspect
import pathlib

import pytest

PYI = pathlib.Path(__file__).resolve().parents[2] / "src/stoker/python/stoker/__init__.pyi"

# The annotation words each kind allows (loosely: the .pyi spells unions and aliases).
TYPES = {"bool": ("bool",), "int": ("int",), "uint": ("int",), "bytes": ("int",),
         "number": ("float",), "text": ("str", "bool", "_PathLike"), "path": ("_PathLike", "str"),
         "list": ("_PathLike", "str", "Sequence"), "choice": ("str", "torch.dtype"),
         "state": ("Dict",)}


def schema(stoker, command):
    return {s["name"]: s for s in stoker._options.SCHEMA if command in s["commands"]}


def pyi_params(function):
    tree = ast.parse(PYI.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function[-1]:
            parent = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and node in n.body]
            if (len(function) == 2) == bool(parent):
                args = node.args.args + node.args.kwonlyargs
                return {a.arg: ast.unparse(a.annotation) for a in args if a.arg != "self"}
    raise AssertionError(f"{function} not in {PYI}")


@pytest.mark.parametrize("command,function,target", [
    ("Loader", ("Loader", "__init__"), lambda s: s.Loader.__init__),
    ("serve", ("serve",), lambda s: s.serve),
])
def test_signature_and_pyi_agree_with_the_schema(stoker, command, function, target):
    options = schema(stoker, command)
    default_key = "default" if command == "Loader" else "default_serve"
    signature = inspect.signature(target(stoker))
    pyi = pyi_params(function)
    named = [p for p in signature.parameters.values()
             if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]
    assert named, signature
    assert set(pyi) - {"advanced", "loader_options"} == {p.name for p in named}, (pyi, signature)
    for p in named:
        assert p.name in options, f"{command}({p.name}=...) is not an option of the schema"
        spec = options[p.name]
        want = spec[default_key]
        if p.default is not inspect.Parameter.empty:
            assert p.default == want or (p.default is None and spec["nullable"]), \
                (p.name, p.default, want)
        assert any(t in pyi[p.name] for t in TYPES[spec["kind"]]), (p.name, pyi[p.name], spec["kind"])
        if spec["nullable"] and p.default is None:
            assert "Optional" in pyi[p.name] or "None" in pyi[p.name], (p.name, pyi[p.name])
    # Everything else reaches the same checks through **options.
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())


@pytest.mark.parametrize("command,doc", [("Loader", lambda s: s.Loader.__doc__),
                                         ("serve", lambda s: s.serve.__doc__)])
def test_docstrings_list_every_option(stoker, command, doc):
    text = doc(stoker)
    for name, spec in schema(stoker, command).items():
        assert f"      {name} " in text, name
        assert spec["help"][:40] in text.replace("\n", " "), name


def test_the_package_checks_exactly_the_schemas_options(stoker):
    assert set(stoker._options.LOADER_OPTIONS) == set(schema(stoker, "Loader"))
    assert set(stoker._options.SERVE_OPTIONS) == set(schema(stoker, "serve"))

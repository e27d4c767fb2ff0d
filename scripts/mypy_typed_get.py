"""A mypy plugin: `.get("key")` on a TypedDict must name a key the TypedDict declares.

mypy checks `record["key"]` against the TypedDict, but lets `record.get("key")` name anything (it answers `object`),
so a misspelt or undeclared key read by `.get` passes the type check and reads None at run time. This plugin makes
such a read an error, then leaves the typing of the read to mypy's own rule.

With TUITRAIN_GET_TALLY=<file> (and `--no-incremental`, so every module is checked), it also appends one line per
checked `.get` call, `path:line:column`, for `scripts/key_reads.py`'s count.
"""
from __future__ import annotations

import os
from collections.abc import Callable

from mypy import errorcodes
from mypy.plugin import MethodContext, Plugin
from mypy.plugins.default import typed_dict_get_callback
from mypy.typeops import try_getting_str_literals
from mypy.types import Type, TypedDictType, get_proper_type


def _checked_get(ctx: MethodContext) -> Type:
    receiver = get_proper_type(ctx.type)
    if isinstance(receiver, TypedDictType) and ctx.args and len(ctx.args[0]) == 1:
        keys = try_getting_str_literals(ctx.args[0][0], ctx.arg_types[0][0]) or []
        name = receiver.fallback.type.name
        for key in keys:
            if key not in receiver.items:
                ctx.api.fail(f'TypedDict "{name}" has no key "{key}" (declare it, or read a key it has)', ctx.context,
                             code=errorcodes.TYPEDDICT_ITEM)
        tally = os.environ.get("TUITRAIN_GET_TALLY")
        if tally and keys:
            with open(tally, "a", encoding="utf-8") as out:
                out.write(f"{ctx.api.path}:{ctx.context.line}:{ctx.context.column}\n")
    return typed_dict_get_callback(ctx)


class TypedGet(Plugin):
    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return _checked_get if fullname == "typing.Mapping.get" else None


def plugin(version: str) -> type[Plugin]:
    return TypedGet

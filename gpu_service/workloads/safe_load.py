"""What a checkpoint would build, read from its pickle before it is unpickled.

`torch.load(weights_only=True)` with ultralytics' allow-list (what `read_checkpoint` runs)
refuses globals outside the list, but it calls an allowed class with whatever arguments
the file gives: a 1.3 KB file can ask for `torch.nn.Linear(16000, 16000)` and get a
gigabyte allocated while it loads. So the pickle is first walked opcode by opcode,
without running any of it, and refused unless it builds things the way `torch.save` of a
real ultralytics checkpoint does (ADR 0027):

- objects are made as `cls.__new__(cls)` (NEWOBJ with no arguments) and then given their
  saved state: no constructor is ever called with arguments from the file;
- the only functions called (REDUCE) are torch's tensor rebuilders and a few plain
  containers (`ALLOWED_CALLS`);
- every storage is a record of the archive, stored uncompressed, of exactly the bytes its
  element type and count say, and every tensor fits inside its storage (no stride-0 view
  that becomes a gigabyte when copied);
- the archive as a whole is at most `MAX_CHECKPOINT_BYTES`.

So what loading allocates is bounded by the size of the file. Nothing here imports torch.
"""

from __future__ import annotations

import math
import pickletools
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_service import errors

MAX_CHECKPOINT_BYTES = 2 * 1024**3  # the largest YOLO checkpoints are ~250 MB
MAX_PICKLE_BYTES = 64 * 1024**2  # a yolov8x checkpoint's data.pkl is under 1 MB

# Callables a checkpoint may invoke (REDUCE), as the pickle names them.
ALLOWED_CALLS = frozenset(
    {
        "torch._utils._rebuild_tensor_v2",
        "torch._utils._rebuild_parameter",
        "torch._utils._rebuild_parameter_with_state",
        "collections.OrderedDict",
        "builtins.set",
        "builtins.frozenset",
        "__builtin__.set",
        "__builtin__.frozenset",
        "torch.Size",
        "torch.device",
        # Training arguments: (cls, (), state); calling it makes an empty namespace.
        "ultralytics.utils.IterableSimpleNamespace",
        "types.SimpleNamespace",
        "_codecs.encode",  # how protocol 2 pickles bytes
        "numpy.core.multiarray.scalar",  # numpy numbers in metrics and train args
        "numpy._core.multiarray.scalar",
        "numpy.dtype",
    }
)

# Bytes per element of each storage type torch.save names in a persistent id.
STORAGE_ITEMSIZE = {
    "torch.DoubleStorage": 8,
    "torch.FloatStorage": 4,
    "torch.HalfStorage": 2,
    "torch.BFloat16Storage": 2,
    "torch.LongStorage": 8,
    "torch.IntStorage": 4,
    "torch.ShortStorage": 2,
    "torch.CharStorage": 1,
    "torch.ByteStorage": 1,
    "torch.BoolStorage": 1,
    "torch.UntypedStorage": 1,
}

# Opcodes that call a class with arguments (protocol 0/1 instantiation) or reach the
# extension registry: torch.save never writes them.
_REFUSED_OPCODES = frozenset({"INST", "OBJ", "EXT1", "EXT2", "EXT4", "PERSID", "NEWOBJ_EX"})
_MEMO_PUT = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_MEMO_GET = frozenset({"GET", "BINGET", "LONG_BINGET"})


@dataclass(frozen=True)
class _Global:
    name: str


@dataclass(frozen=True)
class _Storage:
    key: str
    nbytes: int
    itemsize: int

    @property
    def elements(self) -> int:
        return self.nbytes // self.itemsize


@dataclass(frozen=True)
class _Called:
    name: str


class _Mark:
    pass


_MARK = _Mark()
_UNKNOWN = object()


def refuse(message: str, *, reason: str, **details: Any) -> errors.WeightsRejected:
    return errors.WeightsRejected(
        f"not a safe, loadable ultralytics checkpoint: {message}",
        details={"reason": reason, **details},
    )


def check_checkpoint(*, path: Path) -> None:
    """Refuse (WeightsRejected) a checkpoint whose loading could run anything but torch's
    rebuilders or allocate more than its file holds. Reads the archive; runs nothing."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise refuse(
            "not a torch.save archive (zip)", reason="not_a_torch_archive", detail=str(exc)[:200]
        ) from None
    with archive:
        records = {info.filename: info for info in archive.infolist()}
        _check_records(records)
        pickles = [name for name in records if name.endswith("/data.pkl") and name.count("/") == 1]
        if len(pickles) != 1:
            raise refuse("no single data.pkl in the archive", reason="not_a_torch_archive")
        prefix = pickles[0].removesuffix("data.pkl")
        data = archive.read(pickles[0])
    storages, tensors = _walk(data)
    _check_storages(storages=storages, tensors=tensors, records=records, prefix=prefix)


def _check_records(records: dict[str, zipfile.ZipInfo]) -> None:
    total = 0
    for info in records.values():
        if info.compress_type != zipfile.ZIP_STORED:
            # torch.save stores records uncompressed; compression only hides a bomb.
            raise refuse(
                f"{info.filename} is compressed", reason="compressed_record", record=info.filename
            )
        total += info.file_size
    if total > MAX_CHECKPOINT_BYTES:
        raise refuse(
            f"the archive holds {total} bytes, more than {MAX_CHECKPOINT_BYTES}",
            reason="too_large",
            bytes=total,
        )


def _walk(data: bytes) -> tuple[dict[str, _Storage], list[tuple[Any, ...]]]:
    """Simulate the unpickler's stack symbolically: which callables run on what."""
    if len(data) > MAX_PICKLE_BYTES:
        raise refuse("its pickle is too large", reason="too_large", bytes=len(data))
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    storages: dict[str, _Storage] = {}
    tensors: list[tuple[Any, ...]] = []
    try:
        for op, arg, _pos in pickletools.genops(data):
            _step(op, arg, stack=stack, memo=memo, storages=storages, tensors=tensors)
    except errors.WeightsRejected:
        raise
    except Exception as exc:  # a malformed pickle: torch would fail on it too
        raise refuse(
            f"its pickle cannot be read ({type(exc).__name__})", reason="malformed_pickle"
        ) from None
    return storages, tensors


def _step(
    op: Any,
    arg: Any,
    *,
    stack: list[Any],
    memo: dict[int, Any],
    storages: dict[str, _Storage],
    tensors: list[tuple[Any, ...]],
) -> None:
    name = op.name
    if name in _REFUSED_OPCODES:
        raise refuse(f"it uses the {name} opcode", reason="forbidden_opcode", opcode=name)
    if name == "MARK":
        stack.append(_MARK)
    elif name == "GLOBAL":
        module, _, attr = str(arg).partition(" ")
        stack.append(_Global(f"{module}.{attr}"))
    elif name == "STACK_GLOBAL":
        attr, module = stack.pop(), stack.pop()
        stack.append(_Global(f"{module}.{attr}"))
    elif name in _MEMO_PUT:
        memo[arg] = stack[-1]
    elif name == "MEMOIZE":
        memo[len(memo)] = stack[-1]
    elif name in _MEMO_GET:
        stack.append(memo[arg])
    elif name in {"TUPLE1", "TUPLE2", "TUPLE3"}:
        count = int(name[-1])
        items = tuple(stack[-count:])
        del stack[-count:]
        stack.append(items)
    elif name == "TUPLE":
        stack.append(tuple(_pop_to_mark(stack)))
    elif name == "EMPTY_TUPLE":
        stack.append(())
    elif name == "BINPERSID":
        stack.append(_storage(stack.pop(), storages=storages))
    elif name == "REDUCE":
        args, func = stack.pop(), stack.pop()
        stack.append(_reduce(func, args, tensors=tensors))
    elif name == "NEWOBJ":
        args, cls = stack.pop(), stack.pop()
        if args != ():
            raise refuse(
                f"it builds {_name(cls)} with arguments from the file",
                reason="constructor_arguments",
                callable=_name(cls),
            )
        stack.append(_UNKNOWN)
    elif name in {"BININT", "BININT1", "BININT2", "LONG1", "LONG4", "INT", "LONG"}:
        stack.append(int(arg) if not isinstance(arg, bool) else arg)
    elif name in {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"}:
        stack.append(str(arg))
    else:
        _generic(op, stack)


def _generic(op: Any, stack: list[Any]) -> None:
    """Any other opcode: its documented stack effect, with values we need not know."""
    before = op.stack_before
    if pickletools.markobject in before:
        _pop_to_mark(stack)
        for _ in range(before.index(pickletools.markobject)):
            stack.pop()
    else:
        for _ in before:
            stack.pop()
    if op.name == "DUP":
        stack.append(stack[-1])
        return
    stack.extend(_UNKNOWN for _ in op.stack_after)


def _pop_to_mark(stack: list[Any]) -> list[Any]:
    for index in range(len(stack) - 1, -1, -1):
        if stack[index] is _MARK:
            items = stack[index + 1 :]
            del stack[index:]
            return items
    raise ValueError("no mark on the stack")


def _name(value: Any) -> str:
    return value.name if isinstance(value, _Global | _Called) else "an unknown callable"


def _storage(pid: Any, *, storages: dict[str, _Storage]) -> _Storage:
    """torch.save's persistent id: ('storage', storage type, key, location, element count)."""
    if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
        raise refuse("an object outside the archive is referenced", reason="persistent_id")
    _tag, storage_type, key, _location, numel = pid
    itemsize = STORAGE_ITEMSIZE.get(_name(storage_type))
    if itemsize is None or not isinstance(key, str) or not isinstance(numel, int) or numel < 0:
        raise refuse("a storage of an unknown type or size", reason="persistent_id")
    storage = _Storage(key=key, nbytes=numel * itemsize, itemsize=itemsize)
    known = storages.setdefault(key, storage)
    if known != storage:
        raise refuse(f"storage {key} is declared twice", reason="storage_size")
    return storage


def _reduce(func: Any, args: Any, *, tensors: list[tuple[Any, ...]]) -> _Called:
    name = _name(func)
    if name not in ALLOWED_CALLS:
        raise refuse(f"loading it would call {name}", reason="forbidden_call", callable=name)
    if name == "torch._utils._rebuild_tensor_v2":
        tensors.append(args if isinstance(args, tuple) else ())
    return _Called(name)


def _check_storages(
    *,
    storages: dict[str, _Storage],
    tensors: list[tuple[Any, ...]],
    records: dict[str, zipfile.ZipInfo],
    prefix: str,
) -> None:
    for storage in storages.values():
        record = records.get(f"{prefix}data/{storage.key}")
        if record is None or record.file_size != storage.nbytes:
            raise refuse(
                f"storage {storage.key} declares {storage.nbytes} bytes "
                f"and the archive holds {record.file_size if record else 0}",
                reason="storage_size",
            )
    for args in tensors:
        _check_tensor(args)


def _check_tensor(args: tuple[Any, ...]) -> None:
    """_rebuild_tensor_v2(storage, offset, size, stride, ...): the view fits its storage."""
    if len(args) < 4 or not isinstance(args[0], _Storage):
        raise refuse("a tensor without a storage of the archive", reason="tensor_shape")
    storage, offset, size, stride = args[:4]
    dims = (offset, *size, *stride) if isinstance(size, tuple) and isinstance(stride, tuple) else ()
    if not dims or not all(isinstance(v, int) and v >= 0 for v in dims) or len(size) != len(stride):
        raise refuse("a tensor with an unreadable shape", reason="tensor_shape")
    numel = math.prod(size)
    if numel == 0:
        return
    extent = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True)) + 1
    # A view never has more elements than its storage (torch.save keeps views with their
    # whole storage); a stride-0 view that would become a gigabyte when copied does.
    if numel > storage.elements or extent > storage.elements:
        raise refuse(
            f"a tensor of {numel} elements over a storage of {storage.elements}",
            reason="tensor_larger_than_storage",
            elements=numel,
            storage_elements=storage.elements,
        )

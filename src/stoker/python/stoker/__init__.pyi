import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import torch

__version__: str

class StokerError(RuntimeError):
    code: str

class StokerWarning(UserWarning): ...
class InvalidArgumentError(StokerError, ValueError): ...
class NotFoundError(StokerError, FileNotFoundError): ...
class PermissionDeniedError(StokerError, PermissionError): ...
class DeadlineExceededError(StokerError, TimeoutError): ...

ERROR_CLASSES: Dict[str, type]

def live_tensors() -> int: ...
def finish(
    batch: Dict[str, Any],
    device: Any = ...,
    dtype: Optional[torch.dtype] = ...,
    non_blocking: bool = ...,
) -> Dict[str, Any]: ...

_PathLike = Union[str, "os.PathLike[str]"]

def serve(
    data: Union[_PathLike, Sequence[_PathLike]],
    socket: Optional[_PathLike] = ...,
    world_size: Optional[int] = ...,
    window: int = ...,
    idle_timeout_s: Optional[float] = ...,
    progress_s: float = ...,
    quiet: bool = ...,
    **loader_options: Any,
) -> Dict[str, Any]: ...

class Loader:
    batch_size: int
    def __init__(
        self,
        data: Union[None, _PathLike, Sequence[_PathLike]] = ...,
        model: _PathLike = ...,
        tokenizer: Optional[_PathLike] = ...,
        batch_size: int = ...,
        max_length: int = ...,
        seed: int = ...,
        rank: Optional[int] = ...,
        world_size: Optional[int] = ...,
        threads: int = ...,
        prefetch: int = ...,
        mode: str = ...,
        epochs: int = ...,
        strict: bool = ...,
        max_errors: Optional[int] = ...,
        max_error_rate: float = ...,
        error_report: Optional[_PathLike] = ...,
        pixel_dtype: Union[str, torch.dtype] = ...,
        finish: str = ...,
        padding: str = ...,
        io_threads: int = ...,
        arena_bytes: int = ...,
        media_root: Union[None, _PathLike, Sequence[_PathLike]] = ...,
        trust_media_paths: bool = ...,
        allow_buckets: Union[None, str, Sequence[str]] = ...,
        max_object_bytes: int = ...,
        max_record_bytes: int = ...,
        io_deadline_ms: Optional[int] = ...,
        imds: bool = ...,
        packing: bool = ...,
        max_tokens: Optional[int] = ...,
        pack_format: Optional[str] = ...,
        connect: Union[None, bool, _PathLike] = ...,
        trace: Optional[_PathLike] = ...,
        **advanced: Any,
    ) -> None: ...
    def __iter__(self) -> Iterator[Dict[str, Any]]: ...
    def state_dict(self) -> Dict[str, Any]: ...
    def load_state_dict(self, state: Dict[str, Any]) -> None: ...
    def stats(self) -> Dict[str, Any]: ...
    def sources(self) -> List[Dict[str, Any]]: ...
    def arena_info(self) -> Dict[str, int]: ...
    def rank_info(self) -> Dict[str, int]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Loader": ...
    def __exit__(self, *exc: Any) -> None: ...

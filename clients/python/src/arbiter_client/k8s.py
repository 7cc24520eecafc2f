"""A session as Kubernetes' scheduler extender: the ``k8s.io/kube-scheduler/extender/v1`` bodies
(capitalised keys, as the scheduler sends them) and the bound pods a round evicts.

``/v1/sessions/{id}/k8s/...`` (``docs/integration.md``). Pods and nodes are core/v1 objects,
kept as dicts.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .wire import WireModel


def _wire(name: str) -> Dict[str, str]:
    return {"wire": name}


@dataclass
class ExtenderArgs(WireModel):
    """``filter`` and ``prioritize``: the pod and its candidate nodes, whole or by name."""

    SCHEMA = "ExtenderArgs"
    pod: Optional[Dict[str, Any]] = field(default=None, metadata=_wire("Pod"))
    nodes: Optional[Dict[str, Any]] = field(default=None, metadata=_wire("Nodes"))
    node_names: Optional[List[str]] = field(default=None, metadata=_wire("NodeNames"))


@dataclass
class ExtenderFilterResult(WireModel):
    """The passing nodes, in the form they came in, and why the others do not pass."""

    SCHEMA = "ExtenderFilterResult"
    nodes: Optional[Dict[str, Any]] = field(default=None, metadata=_wire("Nodes"))
    node_names: Optional[List[str]] = field(default=None, metadata=_wire("NodeNames"))
    failed_nodes: Optional[Dict[str, str]] = field(default=None, metadata=_wire("FailedNodes"))
    failed_and_unresolvable_nodes: Optional[Dict[str, str]] = field(
        default=None, metadata=_wire("FailedAndUnresolvableNodes")
    )
    error: Optional[str] = field(default=None, metadata=_wire("Error"))

    def passing(self) -> List[str]:
        """The names of the passing nodes, whichever form they came in."""
        if self.node_names is not None:
            return list(self.node_names)
        items = (self.nodes or {}).get("items") or []
        return [item.get("metadata", {}).get("name", "") for item in items]


@dataclass
class HostPriority(WireModel):
    """One node's score, 0 to 10."""

    SCHEMA = "HostPriority"
    host: str = field(metadata=_wire("Host"))
    score: int = field(metadata=_wire("Score"))


@dataclass
class ExtenderBindingArgs(WireModel):
    """``bind``: the pod and the node the scheduler chose."""

    SCHEMA = "ExtenderBindingArgs"
    pod_name: Optional[str] = field(default=None, metadata=_wire("PodName"))
    pod_namespace: Optional[str] = field(default=None, metadata=_wire("PodNamespace"))
    pod_uid: Optional[str] = field(default=None, metadata=_wire("PodUID"))
    node: Optional[str] = field(default=None, metadata=_wire("Node"))


@dataclass
class ExtenderBindingResult(WireModel):
    """Empty ``error``: bound (and recorded, for an Arbiter pod)."""

    SCHEMA = "ExtenderBindingResult"
    error: Optional[str] = field(default=None, metadata=_wire("Error"))


@dataclass
class MetaPod(WireModel):
    """A pod by UID."""

    SCHEMA = "MetaPod"
    uid: Optional[str] = field(default=None, metadata=_wire("UID"))


@dataclass
class Victims(WireModel):
    """The pods (core/v1 objects) the scheduler would evict from one node."""

    SCHEMA = "Victims"
    pods: Optional[List[Dict[str, Any]]] = field(default=None, metadata=_wire("Pods"))
    num_pdb_violations: Optional[int] = field(default=None, metadata=_wire("NumPDBViolations"))


@dataclass
class MetaVictims(WireModel):
    """The same, pods by UID."""

    SCHEMA = "MetaVictims"
    pods: Optional[List[MetaPod]] = field(default=None, metadata=_wire("Pods"))
    num_pdb_violations: Optional[int] = field(default=None, metadata=_wire("NumPDBViolations"))


@dataclass
class ExtenderPreemptionArgs(WireModel):
    """``preempt``: the preemptor and the victims per node, whole or by UID."""

    SCHEMA = "ExtenderPreemptionArgs"
    pod: Optional[Dict[str, Any]] = field(default=None, metadata=_wire("Pod"))
    node_name_to_victims: Optional[Dict[str, Victims]] = field(default=None, metadata=_wire("NodeNameToVictims"))
    node_name_to_meta_victims: Optional[Dict[str, MetaVictims]] = field(
        default=None, metadata=_wire("NodeNameToMetaVictims")
    )


@dataclass
class ExtenderPreemptionResult(WireModel):
    """The nodes where preempting agrees with the round, with their victims."""

    SCHEMA = "ExtenderPreemptionResult"
    node_name_to_meta_victims: Optional[Dict[str, MetaVictims]] = field(
        default=None, metadata=_wire("NodeNameToMetaVictims")
    )


@dataclass
class PodBinding(WireModel):
    """A pod bound to a node: its job, the node's server (``<type>/<server>``) and the round."""

    SCHEMA = "PodBinding"
    namespace: str
    name: str
    uid: str
    node: str
    job: str
    server: str
    round: int


@dataclass
class BindingList(WireModel):
    """``GET /v1/sessions/{id}/k8s/bindings``."""

    SCHEMA = "BindingList"
    session: str
    bindings: List[PodBinding]


@dataclass
class Eviction(WireModel):
    """A bound pod the current round does not run where it is, and why."""

    SCHEMA = "Eviction"
    namespace: str
    name: str
    uid: str
    node: str
    job: str
    server: str
    reason: str


@dataclass
class EvictionList(WireModel):
    """``GET /v1/sessions/{id}/k8s/evictions``."""

    SCHEMA = "EvictionList"
    session: str
    rounds: int
    evictions: List[Eviction]

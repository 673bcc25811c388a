"""MuJoCo's constraint islands (engine_island.c mj_island): the dofs coupled through constraint rows and the kinematic
trees, each solved as its own problem (MuJoCo 4.0's default; mjDSBL_ISLAND, model.opt.island False, turns it off).

    dof_trees(model)           (nv,) the tree of each dof: the link carrying its tree's root body (MuJoCo's dof_treeid,
                               up to numbering: trees are ordered as their roots)
    partition(model, rows)     [Island]: each island's dofs and rows, in MuJoCo's order (islands by their first tree,
                               dofs and rows ascending within one)
    island_rows(rows, island)  the rows of one island (all nv columns; J is zero off the island's dofs)

Trees are joined by the rows, each row's trees found as MuJoCo 4's treeIterInit finds them: a contact's are its two geoms'
bodies' trees, a connect's or weld's its two bodies' trees (even where the Jacobian is zero on one of them), any other
row's those of its nonzero Jacobian columns; the rows that continue a constraint (same type and id as the row before)
go where its first row goes. Dofs of trees without rows are in no island. The trees the discrete step's metric couples
are joined by _metric_links (cpp/island.h's metric_links: the same links, unioned in place).
"""

from dataclasses import dataclass, replace

import numpy as np

from physai.engine.constraint import CONTACT_FRICTIONLESS, EQUALITY, Rows, row_groups
from physai.engine.model import CONNECT, WELD, Model


@dataclass
class Island:
    """dofs (k,) and rows (n,): the dof and row indices of one island, ascending."""

    dofs: np.ndarray
    rows: np.ndarray


def dof_trees(model: Model) -> np.ndarray:
    """(nv,) the tree of each dof: the index of the link carrying its tree's root body."""
    return np.asarray(model.link_centerid)[np.asarray(model.dof_linkid)]


def _root(parent: dict, tree: int) -> int:
    """The root of tree's set (mj_dsuRoot), the path to it compressed."""
    root = tree
    while parent[root] != root:
        root = parent[root]
    while parent[tree] != root:
        parent[tree], tree = root, parent[tree]
    return root


def body_tree(model: Model, body: int) -> int:
    """The tree of a body (MuJoCo's body_treeid): its link's tree, -1 for the world and bodies welded to it."""
    link = int(model.body_linkid[body]) if body >= 0 else -1
    return int(model.link_centerid[link]) if link >= 0 else -1


def _row_trees(model: Model, r: Rows, trees: np.ndarray) -> list:
    """The trees of each row (treeIterInit): a contact's geoms' bodies', a connect's or weld's bodies', else those of
    its nonzero Jacobian columns; a row continuing a constraint: its first row's."""
    out = []
    for i in range(r.nefc):
        kind, ident = int(r.type[i]), int(r.id[i])
        if i > 0 and kind == r.type[i - 1] and ident == r.id[i - 1]:
            out.append(out[-1])
            continue
        if kind >= CONTACT_FRICTIONLESS:
            bodies = r.contact_body[ident].tolist()
        elif kind == EQUALITY and model.eq_type[ident] in (CONNECT, WELD):
            bodies = [int(model.eq_obj1id[ident]), int(model.eq_obj2id[ident])]
        else:
            out.append(sorted(set(trees[np.flatnonzero(r.J[i])].tolist())))
            continue
        out.append(sorted({t for t in (body_tree(model, b) for b in bodies) if t >= 0}))
    return out


def partition(model: Model, r: Rows, coupled: np.ndarray | None = None) -> list:
    """The islands of the rows r (see the module): [Island], ordered by their first tree. coupled (nv, nv) bool: the
    dofs the solver's metric couples off the tree's pattern (solver.off_pattern: the discrete step's tendon and servo
    terms); their trees join one island when a row reaches one of them, as MuJoCo 4 keeps metric-coupled trees in one."""
    trees = dof_trees(model)
    row_trees = _row_trees(model, r, trees)
    links = _metric_links(row_trees, trees, coupled) if coupled is not None and coupled.any() else []
    # union the trees of each row and metric link, a set's root its smallest tree (mj_dsuMerge)
    parent: dict = {}
    for ts in row_trees + links:
        for t in ts:
            parent.setdefault(t, t)
        for a, b in zip(ts, ts[1:]):
            ra, rb = _root(parent, a), _root(parent, b)
            parent[max(ra, rb)] = min(ra, rb)
    # islands numbered by their root, trees ascending (mj_dsuAssign)
    roots = sorted({_root(parent, t) for t in parent})
    number = {root: k for k, root in enumerate(roots)}
    tree_island = {t: number[_root(parent, t)] for t in parent}
    dof_island = np.array([tree_island.get(t, -1) for t in trees.tolist()], dtype=np.intp)
    # a row of no tree: island 0, or in none when there is no island
    row_island = np.array([tree_island[ts[0]] if ts else 0 for ts in row_trees], dtype=np.intp)
    return [Island(np.flatnonzero(dof_island == k), np.flatnonzero(row_island == k)) for k in range(len(roots))]


def _metric_links(row_trees: list, trees: np.ndarray, coupled: np.ndarray) -> list:
    """[[tree a, tree b]]: each pair of trees the metric couples (coupled (nv, nv) bool) that a row reaches (or such a
    link in turn), to union with the rows' trees."""
    pairs = {(min(a, b), max(a, b)) for a, b in zip(trees[np.nonzero(coupled)[0]].tolist(),
                                                    trees[np.nonzero(coupled)[1]].tolist()) if a != b}
    reached = {t for ts in row_trees for t in ts}
    links, grown = [], True
    while grown:                                       # the links from reached trees, transitively
        grown = False
        for a, b in sorted(pairs):
            if (a in reached or b in reached) and [a, b] not in links:
                links.append([a, b])
                grown = grown or not {a, b} <= reached
                reached |= {a, b}
    return links


def island_rows(r: Rows, island: Island) -> Rows:
    """The rows of one island (MuJoCo's iefc_*): each per-row array at island.rows, ne, nf, nl counted there; the
    per-contact arrays kept (contact ids still index them), contact_row renumbered (-1: the contact's rows are elsewhere),
    the groups of consecutive rows kept (cpp/island.h's)."""
    k = island.rows
    per_row = {name: getattr(r, name)[k] for name in ("J", "pos", "margin", "frictionloss", "type", "id", "diagA", "R",
                                                     "D", "K", "B", "imp", "impP", "vel", "aref")}
    position = np.full(r.nefc + 1, -1, np.intp)
    position[k] = np.arange(len(k))
    contact_row = position[r.contact_row] if len(r.contact_row) else r.contact_row
    count = lambda lo, hi: int(np.count_nonzero((k >= lo) & (k < hi)))             # noqa: E731
    # a group starts where one of r's does, and where the island's rows are not consecutive in r
    starts = np.isin(k, row_groups(r)) | np.r_[True, np.diff(k) != 1][:len(k)]
    return replace(r, **per_row, ne=count(0, r.ne), nf=count(r.ne, r.ne + r.nf),
                   nl=count(r.ne + r.nf, r.ne + r.nf + r.nl), contact_row=contact_row,
                   group=np.r_[np.flatnonzero(starts), len(k)].astype(np.intp))

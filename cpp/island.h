// MuJoCo's constraint islands (src/physai/engine/island.py: engine_island.c mj_island): the dofs coupled through
// constraint rows and the kinematic trees, each solved as its own problem (m.opt_island; mjDSBL_ISLAND turns it off):
//
//     dof_trees(m, trees)                 the tree of each dof: the link carrying its tree's root body
//     partition(m, r, islands, s, C)      each island's dofs and rows, in MuJoCo's order (islands by their first tree,
//                                         dofs and rows ascending within one)
//     island_rows(m, r, island, out)      the rows of one island as the solvers read them (all nv columns, J zero off
//                                         the island's dofs; or the island's own numbers)
//
// Trees are joined by the rows, each row's trees found as MuJoCo 4's treeIterInit finds them: a contact's are its two
// geoms' bodies' trees, a connect's or weld's its two bodies' trees, any other row's those of its nonzero Jacobian
// columns; the rows that continue a constraint (same type and id as the row before) go where its first row goes. Dofs
// of trees without rows are in no island.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "constraint.h"
#include "model.h"

namespace physai {
namespace {

// the tree of each dof (nv): the index of the link carrying its tree's root body
inline void dof_trees(const Model &m, std::vector<int64_t> &trees) {
    trees.resize(size_t(m.nv));
    for (int j = 0; j < m.nv; j++) trees[size_t(j)] = m.link_centerid[m.dof_linkid[j]];
}

// the root of tree's set (mj_dsuRoot), the path to it compressed
inline int64_t tree_root(std::vector<int64_t> &parent, int64_t tree) {
    int64_t root = tree;
    while (parent[size_t(root)] != root) root = parent[size_t(root)];
    while (parent[size_t(tree)] != root) {
        int64_t next = parent[size_t(tree)];
        parent[size_t(tree)] = root, tree = next;
    }
    return root;
}

// the tree of a body (MuJoCo's body_treeid): its link's tree, -1 for the world and bodies welded to it
inline int64_t body_tree(const Model &m, int64_t body) {
    int64_t link = body >= 0 ? m.body_linkid[body] : -1;
    return link >= 0 ? m.link_centerid[link] : -1;
}

// the trees the metric couples (coupling (nv x nv) nonzero between dofs of two trees) joined in parent when a row reached
// one of them (parent >= 0), or such a link in turn (island._metric_links: MuJoCo 4 keeps metric-coupled trees in one)
inline void metric_links(const Model &m, const std::vector<int64_t> &trees, const double *coupling,
                         std::vector<int64_t> &parent) {
    const size_t nv = size_t(m.nv);
    for (bool grown = true; grown;) {                                  // the links from reached trees, transitively
        grown = false;
        for (size_t i = 0; i < nv; i++)
            for (size_t j = 0; j < nv; j++) {
                int64_t a = trees[i], b = trees[j];
                if (a == b || coupling[i * nv + j] == 0.0 || (parent[size_t(a)] < 0 && parent[size_t(b)] < 0)) continue;
                for (int64_t t : {a, b})
                    if (parent[size_t(t)] < 0) parent[size_t(t)] = t;
                int64_t ra = tree_root(parent, a), rb = tree_root(parent, b);
                if (ra == rb) continue;
                parent[size_t(std::max(ra, rb))] = std::min(ra, rb), grown = true;
            }
    }
}

// the islands of the rows r (see above), ordered by their first tree; with coupling (nv x nv, or null) the trees the
// discrete step's metric couples joined too (metric_links)
// (islands' storage and s: a workspace's, kept between solves; the same islands as made anew)
inline void partition(const Model &m, const Rows &r, std::vector<Island> &islands, IslandScratch &s,
                      const double *coupling = nullptr) {
    std::vector<int64_t> &trees = s.trees, &parent = s.parent, &row_tree = s.row_tree, &number = s.number;
    parent.assign(size_t(m.nlink), -1), row_tree.assign(size_t(r.nefc), -1);
    dof_trees(m, trees);
    // join tree t to row k's trees, a set's root its smallest tree (mj_dsuMerge)
    auto join = [&](size_t k, int64_t t) {
        if (t < 0) return;
        if (parent[size_t(t)] < 0) parent[size_t(t)] = t;
        if (row_tree[k] < 0) {
            row_tree[k] = t;
            return;
        }
        int64_t ra = tree_root(parent, row_tree[k]), rb = tree_root(parent, t);
        parent[size_t(std::max(ra, rb))] = std::min(ra, rb);
    };
    for (int i = 0; i < r.nefc; i++) {
        size_t k = size_t(i);
        int kind = r.type[k];
        int64_t ident = r.id[k];
        if (i > 0 && kind == r.type[k - 1] && ident == r.id[k - 1]) {
            row_tree[k] = row_tree[k - 1];
            continue;
        }
        // a contact: its geoms' bodies' trees; a connect or weld: its bodies' trees (treeIterInit)
        if (kind >= CONTACT_FRICTIONLESS) {
            join(k, body_tree(m, r.con.body1(ident))), join(k, body_tree(m, r.con.body2(ident)));
            continue;
        }
        if (kind == EQUALITY && (m.eq_type[ident] == EQ_CONNECT || m.eq_type[ident] == EQ_WELD)) {
            join(k, body_tree(m, m.eq_obj1id[ident])), join(k, body_tree(m, m.eq_obj2id[ident]));
            continue;
        }
        // any other row: the trees of its nonzero Jacobian columns
        for (int a = r.start[k]; a < r.start[k + 1]; a++)
            if (r.val[size_t(a)] != 0.0) join(k, trees[size_t(r.cols[size_t(a)])]);
    }
    if (coupling) metric_links(m, trees, coupling, parent);
    // islands numbered by their root, trees ascending (mj_dsuAssign)
    number.assign(size_t(m.nlink), -1);
    int64_t n = 0;
    for (int64_t t = 0; t < m.nlink; t++)
        if (parent[size_t(t)] == t) number[size_t(t)] = n++;
    islands.resize(size_t(n));                                         // n empty islands, their storage kept
    for (Island &island : islands) island.dofs.clear(), island.rows.clear();
    for (int j = 0; j < m.nv; j++) {
        int64_t t = trees[size_t(j)];
        if (parent[size_t(t)] >= 0) islands[size_t(number[size_t(tree_root(parent, t))])].dofs.push_back(j);
    }
    for (int i = 0; i < r.nefc; i++) {
        int64_t t = row_tree[size_t(i)];
        if (t < 0 && islands.empty()) continue;                        // a row of no tree: island 0, or in none when there is no island
        islands[size_t(t < 0 ? 0 : number[size_t(tree_root(parent, t))])].rows.push_back(i);
    }
}

// the rows of one island (MuJoCo's iefc_*) into out: of each row at island.rows what the solvers read (frictionloss, R,
// D, aref, type, id; pos, margin, diagA, K, B, imp, impP and vel are not gathered), its entries and compressed columns,
// ne, nf, nl counted there, the groups of consecutive rows kept; the contacts kept (contact ids still index them; with
// contacts false out.con and out.contact_mu are left as they are: a caller that put them there once for every island),
// contact_row renumbered (-1: the contact's rows are elsewhere). local (nv, or null): each column's number in the island
// (ascending with the dofs': out.tree then the caller's, chains on the island's parents). O(the island's rows and
// entries) besides contact_row's fill.
inline void island_rows(const Model &m, const Rows &r, const Island &island, Rows &out, bool contacts = true,
                        const int64_t *local = nullptr) {
    const std::vector<int> &k = island.rows;
    const size_t n = k.size();
    const int *at = k.data();
    out.nv = r.nv, out.nefc = int(n), out.dense = false;
    for (auto field : {&Rows::pos, &Rows::margin, &Rows::diagA, &Rows::K, &Rows::B, &Rows::imp, &Rows::impP, &Rows::vel})
        (out.*field).clear();                                          // not gathered: left empty, not stale
    // frictionloss, R, D and aref gathered in one pass through plain pointers (the vectors' storage not re-read per entry)
    out.frictionloss.resize(n), out.R.resize(n), out.D.resize(n), out.aref.resize(n);
    double *fl = out.frictionloss.data(), *R = out.R.data(), *D = out.D.data(), *aref = out.aref.data();
    const double *rfl = r.frictionloss.data(), *rR = r.R.data(), *rD = r.D.data(), *raref = r.aref.data();
    for (size_t c = 0; c < n; c++) {
        const size_t i = size_t(at[c]);
        fl[c] = rfl[i], R[c] = rR[i], D[c] = rD[i], aref[c] = raref[i];
    }
    size_t entries = 0;                                                // sized once, then written in place
    for (size_t c = 0; c < n; c++) entries += size_t(r.start[size_t(at[c]) + 1] - r.start[size_t(at[c])]);
    out.type.resize(n), out.id.resize(n), out.start.resize(n + 1), out.cols.resize(entries), out.val.resize(entries);
    out.group.clear();
    if (contacts) out.con = r.con, out.contact_mu = r.contact_mu;
    out.contact_row.assign(r.contact_row.size(), -1);
    const int *rstart = r.start.data(), *rcols = r.cols.data();
    const double *rval = r.val.data();
    const int64_t *rtype = r.type.data(), *rid = r.id.data(), *rrow = r.contact_row.data();
    int64_t *type = out.type.data(), *id = out.id.data(), *row = out.contact_row.data();
    int *start = out.start.data(), *cols = out.cols.data();
    double *val = out.val.data();
    const int nf_end = r.ne + r.nf, nl_end = nf_end + r.nl;
    int e = 0;
    // ne, nf, nl: the island's rows below r.ne, nf_end, nl_end (at ascending)
    const int ne = int(std::lower_bound(at, at + n, r.ne) - at), nf = int(std::lower_bound(at, at + n, nf_end) - at) - ne;
    const int nl = int(std::lower_bound(at, at + n, nl_end) - at) - ne - nf;
    // the first group of r starting at or after the island's first row (k ascending: the groups met in order)
    auto group = std::lower_bound(r.group.begin(), r.group.end(), n == 0 ? 0 : at[0]);
    start[0] = 0;
    for (size_t c = 0; c < n; c++) {
        const int i = at[c];
        while (group != r.group.end() && *group < i) ++group;
        bool first = group != r.group.end() && *group == i;            // a group of r starts at row i
        type[c] = rtype[i], id[c] = rid[i];
        if (first || c == 0 || at[c - 1] != i - 1) out.group.push_back(int(c));   // a group starts here
        if (rtype[i] >= CONTACT_FRICTIONLESS && rrow[rid[i]] == int64_t(i)) row[rid[i]] = int64_t(c);   // its first row
        const int a0 = rstart[i], na = rstart[i + 1] - a0;            // its entries: values, then columns
        for (int a = 0; a < na; a++) val[e + a] = rval[a0 + a];
        if (local)
            for (int a = 0; a < na; a++) cols[e + a] = int(local[rcols[a0 + a]]);
        else
            for (int a = 0; a < na; a++) cols[e + a] = rcols[a0 + a];
        e += na, start[c + 1] = e;
    }
    out.ne = ne, out.nf = nf, out.nl = nl;
    out.group.push_back(out.nefc);
    if (!local) out.tree = chains(m, out);
}

}  // namespace
}  // namespace physai

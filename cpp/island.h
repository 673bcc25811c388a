// MuJoCo's constraint islands (src/physai/engine/island.py: engine_island.c mj_island): the dofs coupled through
// constraint rows and the kinematic trees, each solved as its own problem (m.opt_island; mjDSBL_ISLAND turns it off):
//
//     dof_trees(m, trees)                 the tree of each dof: the link carrying its tree's root body
//     partition(m, r, islands, s, C)      each island's dofs and rows, in MuJoCo's order (islands by their first tree,
//                                         dofs and rows ascending within one)
//     island_rows(m, r, island, out)      the rows of one island (all nv columns; J is zero off the island's dofs)
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

// the rows of one island (MuJoCo's iefc_*) into out: each row's entries and compressed columns at island.rows, ne, nf,
// nl counted there, the groups of consecutive rows kept; the contacts kept (contact ids still index them; with contacts
// false out.con and out.contact_mu are left as they are: a caller that put them there once for every island), contact_row
// renumbered (-1: the contact's rows are elsewhere). O(the island's rows and entries) besides contact_row's fill.
inline void island_rows(const Model &m, const Rows &r, const Island &island, Rows &out, bool contacts = true) {
    const std::vector<int> &k = island.rows;
    out.nv = r.nv, out.nefc = int(k.size()), out.dense = false;
    out.ne = out.nf = out.nl = 0;
    std::vector<double> Rows::*per_row[] = {&Rows::pos, &Rows::margin, &Rows::frictionloss, &Rows::diagA, &Rows::R,
                                            &Rows::D, &Rows::K, &Rows::B, &Rows::imp, &Rows::impP, &Rows::vel,
                                            &Rows::aref};
    for (auto field : per_row) {                                       // gathered through plain pointers (the
        (out.*field).resize(k.size());                                 // vectors' storage is not re-read per entry)
        double *to = (out.*field).data();
        const double *from = (r.*field).data();
        const int *at = k.data();
        for (size_t c = 0; c < k.size(); c++) to[c] = from[at[c]];
    }
    out.type.resize(k.size()), out.id.resize(k.size());
    out.start.assign(1, 0), out.cols.clear(), out.val.clear(), out.group.clear();
    if (contacts) out.con = r.con, out.contact_mu = r.contact_mu;
    out.contact_row.assign(r.contact_row.size(), -1);
    // the first group of r starting at or after the island's first row (k ascending: the groups met in order)
    auto group = std::lower_bound(r.group.begin(), r.group.end(), k.empty() ? 0 : k[0]);
    for (size_t c = 0; c < k.size(); c++) {
        size_t i = size_t(k[c]);
        while (group != r.group.end() && *group < int(i)) ++group;
        bool first = group != r.group.end() && *group == int(i);       // a group of r starts at row i
        out.type[c] = r.type[i], out.id[c] = r.id[i];
        out.ne += int(k[c] < r.ne), out.nf += int(k[c] >= r.ne && k[c] < r.ne + r.nf);
        out.nl += int(k[c] >= r.ne + r.nf && k[c] < r.ne + r.nf + r.nl);
        if (first || c == 0 || k[c - 1] != k[c] - 1) out.group.push_back(int(c));   // a group starts here
        if (r.type[i] >= CONTACT_FRICTIONLESS && r.contact_row[size_t(r.id[i])] == int64_t(i))
            out.contact_row[size_t(r.id[i])] = int64_t(c);             // the contact's first row
        out.cols.insert(out.cols.end(), r.cols.begin() + r.start[i], r.cols.begin() + r.start[i + 1]);
        out.val.insert(out.val.end(), r.val.begin() + r.start[i], r.val.begin() + r.start[i + 1]);
        out.start.push_back(int(out.cols.size()));
    }
    out.group.push_back(out.nefc);
    out.tree = chains(m, out);
}

}  // namespace
}  // namespace physai

#pragma once
// The backward engine: the reverse pass over the tape.
//
// Order. Every node gets a sequence number when it is recorded, from a counter private to the
// recording thread (and never below its inputs' numbers plus one, so a graph that spans threads
// stays ordered). backward() runs the nodes reachable from the root in strictly descending
// sequence order: a valid topological order (an input is always recorded before its consumers),
// and one that depends only on the order in which nodes were recorded, not on the graph's shape.
// So two ranks that record the same collectives in the same order run their backward collectives
// in the same (reversed) order, whatever local ops each recorded in between.
//
// Gradients. A node runs once, with the sum of the gradients its consumers sent it; a leaf
// requiring grad accumulates (adds) into Var::grad() across backward calls until zero_grad().
// The stored gradient owns its memory and follows PyTorch's layout contract: the value's exact
// strides when the value is non-contiguous but dense (a transposed or permuted tensor), else
// contiguous (a contiguous value, or one with overlaps or gaps: expand, narrow).
// Without retain_graph each node's saved tensors and edges are released right after it runs, and
// a later backward reaching it throws AutodiffError.
//
// Gradient-ready hook (BackwardOptions::grad_ready). Before the pass, backward counts for every
// leaf the reachable nodes that send it a gradient (its uses). A leaf is final once the last of
// those nodes has run, and the hook fires right then. So leaves fire in the order of their last
// use's node, in descending sequence order (the order the pass runs nodes). Several leaves final
// at one node fire in that node's input order. This order depends only on the order the graph was
// recorded, so it is the same on every rank that records the same graph in the same order. A
// leaf whose last use sent it no gradient still fires when that node has run (its gradient is
// final, unchanged); leaves reached only through nodes that never ran (no gradient reached them)
// fire at the end of the pass, in the order a depth-first walk from the root (edges in input
// order) first meets them. A root that is itself a leaf fires after its seed is accumulated. When
// the hook throws, backward stops and rethrows (later leaves do not fire).
//
// Threads. No global mutable state: grad mode and the sequence counter are thread-local, the
// pending gradients live in the graph's nodes. Independent graphs may be recorded and run on any
// number of threads at once. One graph (or a leaf shared by two graphs) must not be run by two
// threads at the same time: give each thread (rank) its own replica of the model.
#include "autodiff/var.h"

namespace ruccl::autodiff {

/// Runs the reverse pass from `root`; see the file comment and Var::backward.
void backward(const Var& root, const BackwardOptions& options = {});

}  // namespace ruccl::autodiff

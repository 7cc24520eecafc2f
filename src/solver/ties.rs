//! The price decompositions' starting bases price their GPU types through jobs that sit at a tie:
//! between two priced types, or (for the tie-break) at the margin of one, against a root that
//! stands for the price level. Each such job turns one more column or row basic, so the ties must
//! form a forest: the cheapest first (Kruskal, on a union-find), at most one per job
//! (`max_min_ratio::decomposition::recovery`, `max_weighted_throughput::recovery`).

/// Nodes joined so far.
pub struct Forest {
    root: Vec<usize>,
}

impl Forest {
    /// The node that stands for `node`'s tree.
    pub fn find(&mut self, mut node: usize) -> usize {
        while self.root[node] != node {
            self.root[node] = self.root[self.root[node]];
            node = self.root[node];
        }
        node
    }
}

/// A candidate tie: how near the job is to it (smaller first), the job, what the tie turns basic,
/// and the two nodes it joins.
pub type Tie<T> = (f64, usize, T, usize, usize);

/// The forest over `nodes` nodes that the cheapest ties make, one tie per job, and the ties it
/// took: what each turns basic, with its first node.
pub fn spanning<T: Copy>(nodes: usize, jobs: usize, mut ties: Vec<Tie<T>>) -> (Forest, Vec<(T, usize)>) {
    ties.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut forest = Forest { root: (0..nodes).collect() };
    let mut tied = vec![false; jobs];
    let mut taken = Vec::new();
    for (_, job, turn, a, b) in ties {
        let (ra, rb) = (forest.find(a), forest.find(b));
        if ra == rb || tied[job] {
            continue;
        }
        forest.root[ra] = rb;
        tied[job] = true;
        taken.push((turn, a));
    }
    (forest, taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cheapest_ties_join_the_nodes_one_per_job() {
        // Nodes 0..3. Job 0 offers the two cheapest ties, but only one counts; the tie that would
        // close a cycle is skipped.
        let ties = vec![
            (0.1, 0, 'a', 0, 1),
            (0.2, 0, 'b', 1, 2),
            (0.3, 1, 'c', 1, 2),
            (0.4, 2, 'd', 0, 2),
            (0.5, 3, 'e', 2, 3),
        ];
        let (mut forest, taken) = spanning(4, 4, ties);
        assert_eq!(taken, [('a', 0), ('c', 1), ('e', 2)]);
        let top = forest.find(0);
        assert!((1..4).all(|w| forest.find(w) == top));
    }
}

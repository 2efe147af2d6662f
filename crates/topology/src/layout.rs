//! The processing graph ([`crate::graph`]) laid out for drawing: every node, topic and store
//! gets a box, every sub-topology and global store a box around its nodes, every edge a
//! polyline. [`crate::svg`] draws it.
//!
//! The layout is dagre's (the `dagre` crate, a port of dagre.js): a layered (Sugiyama) layout
//! with compound nodes, so that each sub-topology and global store is one rectangle that holds
//! its nodes and no others. Topics and stores are top-level nodes, so a repartition topic sits
//! between the two sub-topologies it links and a store shared by several processors is drawn
//! once. Each cluster also holds an invisible node the size of its label, ranked above the
//! cluster's entry nodes, so the label has room of its own and the box is at least as wide.
//!
//! Layers run top to bottom, which suits chains of processors. A graph that comes out wider
//! than [`WIDE`] (a processor fanning out to a hundred others) is laid out left to right as
//! well, and the narrower drawing wins: a web page scrolls down more easily than sideways.
//!
//! Text is measured for a monospaced font (see [`CHAR_WIDTH`]), so a box fits its label in any
//! browser. Names longer than [`MAX_LABEL_COLUMNS`] are shortened with an ellipsis in the
//! visible text only.
//!
//! Everything is deterministic: the graph is built in a fixed order and dagre iterates in
//! insertion order, so the same topology gives the same coordinates.
//!
//! Cost: dagre is the whole of it and grows faster than the graph (`benches/topology_svg.rs`:
//! about 0.2 to 0.5 s for 200 nodes in release on a loaded 2-core machine, about 1.5 s for
//! 500 and 7 s for 1,000). A server drawing topologies should cache the drawing per
//! description (the output only depends on it) and lay out off its async workers.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

use dagre::graph::{Graph as DagreGraph, GraphOptions};
pub use dagre::RankDir;
use dagre::{EdgeLabel, LayoutOptions, NodeLabel};
use unicode_width::UnicodeWidthChar;

use crate::graph::{Cluster, ClusterKind, Graph, GraphNode, Shape};

/// Font size of every text, in pixels.
pub const FONT_SIZE: f64 = 12.0;
/// The advance of one column of a monospaced font at [`FONT_SIZE`] (0.6 em, as DejaVu Sans
/// Mono, Menlo and Consolas have it, rounded up).
pub const CHAR_WIDTH: f64 = 7.3;
/// Visible labels are cut to this many columns (an East Asian wide character counts two).
pub const MAX_LABEL_COLUMNS: usize = 48;

const NODE_PADDING_X: f64 = 12.0;
const NODE_HEIGHT: f64 = 30.0;
const STORE_HEIGHT: f64 = 40.0;
const MIN_NODE_WIDTH: f64 = 60.0;
const CLUSTER_LABEL_HEIGHT: f64 = 16.0;
const CLUSTER_LABEL_PADDING_X: f64 = 8.0;
const MARGIN: f64 = 20.0;
/// The width, in pixels, beyond which a left-to-right layout is tried too.
pub const WIDE: f64 = 3000.0;

/// An axis-aligned rectangle: top-left corner and size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

impl Rect {
    fn around(center_x: f64, center_y: f64, width: f64, height: f64) -> Rect {
        Rect {
            x: center_x - width / 2.0,
            y: center_y - height / 2.0,
            width,
            height,
        }
    }

    pub fn right(&self) -> f64 {
        self.x + self.width
    }

    pub fn bottom(&self) -> f64 {
        self.y + self.height
    }

    /// Whether the interiors intersect (touching edges do not count).
    pub fn overlaps(&self, other: &Rect) -> bool {
        self.x < other.right()
            && other.x < self.right()
            && self.y < other.bottom()
            && other.y < self.bottom()
    }

    /// Whether `other` lies entirely within this rectangle.
    pub fn contains(&self, other: &Rect) -> bool {
        other.x >= self.x
            && other.y >= self.y
            && other.right() <= self.right()
            && other.bottom() <= self.bottom()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

/// A sub-topology's or global store's box.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedCluster {
    /// The graph's synthetic id.
    pub id: String,
    pub kind: ClusterKind,
    /// The full label (`Sub-topology: 0`).
    pub label: String,
    pub rect: Rect,
    /// Where the label goes: inside `rect`, clear of every node.
    pub label_rect: Rect,
}

/// A node, topic or store with its box.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedNode {
    /// The graph's synthetic id.
    pub id: String,
    /// The exact name.
    pub name: String,
    /// The name as shown: at most [`MAX_LABEL_COLUMNS`] columns, ending in `…` when cut.
    pub text: String,
    pub shape: Shape,
    /// Index into [`Layout::clusters`]; `None` for topics and stores.
    pub cluster: Option<usize>,
    pub rect: Rect,
}

/// An edge, from the border of one box to the border of the other.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedEdge {
    /// The synthetic id of the node it leaves.
    pub from: String,
    /// The synthetic id of the node it enters.
    pub to: String,
    /// At least two points; the last one touches the target.
    pub points: Vec<Point>,
}

/// A laid-out graph. Every coordinate is within `0..width` × `0..height`.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    pub clusters: Vec<PlacedCluster>,
    /// Cluster members in cluster order, then topics, then stores (the graph's order).
    pub nodes: Vec<PlacedNode>,
    pub edges: Vec<PlacedEdge>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// The layout library failed (it panicked, or left a node without a position). A bug in it
    /// or in how it is called, never the topology's fault.
    #[error("graph layout failed: {0}")]
    Layout(String),
}

/// Lays the graph out: top to bottom, or left to right when that is narrower for a graph
/// wider than [`WIDE`].
pub fn layout(graph: &Graph) -> Result<Layout, LayoutError> {
    let top_down = layout_in(graph, RankDir::TB)?;
    if top_down.width <= WIDE {
        return Ok(top_down);
    }
    let left_right = layout_in(graph, RankDir::LR)?;
    Ok(if left_right.width < top_down.width {
        left_right
    } else {
        top_down
    })
}

/// Lays the graph out with layers in one direction.
pub fn layout_in(graph: &Graph, direction: RankDir) -> Result<Layout, LayoutError> {
    let mut dagre_graph = dagre_graph(graph);
    let options = LayoutOptions {
        rankdir: direction,
        nodesep: 24.0,
        edgesep: 12.0,
        ranksep: 36.0,
        marginx: MARGIN,
        marginy: MARGIN,
        ..LayoutOptions::default()
    };
    // dagre asserts its invariants with panics; a topology that trips one must cost a
    // drawing, not the caller's thread (the daemon serves drawings).
    catch_unwind(AssertUnwindSafe(|| {
        dagre::layout(&mut dagre_graph, Some(options))
    }))
    .map_err(|panic| LayoutError::Layout(panic_message(panic.as_ref())))?;
    placed(graph, &dagre_graph)
}

/// The visible text of a name: cut to [`MAX_LABEL_COLUMNS`] columns with a trailing `…`, and
/// its width in columns.
pub fn visible_text(name: &str) -> (String, usize) {
    let columns: usize = name.chars().map(char_columns).sum();
    if columns <= MAX_LABEL_COLUMNS {
        return (name.to_string(), columns);
    }
    let mut text = String::new();
    let mut used = 0;
    for c in name.chars() {
        let width = char_columns(c);
        // One column stays free for the ellipsis.
        if used + width > MAX_LABEL_COLUMNS - 1 {
            break;
        }
        text.push(c);
        used += width;
    }
    text.push('…');
    (text, used + 1)
}

/// The pixel width of `columns` columns of text.
pub fn text_width(columns: usize) -> f64 {
    columns as f64 * CHAR_WIDTH
}

/// Control characters take no room; wide characters two columns; the rest one.
fn char_columns(c: char) -> usize {
    c.width().unwrap_or(0)
}

fn node_size(node: &GraphNode) -> (f64, f64) {
    let (_, columns) = visible_text(&node.label);
    let width = (text_width(columns) + 2.0 * NODE_PADDING_X).max(MIN_NODE_WIDTH);
    let height = match node.shape {
        Shape::Store => STORE_HEIGHT,
        _ => NODE_HEIGHT,
    };
    (width, height)
}

fn dagre_graph(graph: &Graph) -> DagreGraph<NodeLabel, EdgeLabel> {
    let mut g = DagreGraph::with_options(GraphOptions {
        directed: true,
        multigraph: true,
        compound: true,
    });
    let sized = |node: &GraphNode| {
        let (width, height) = node_size(node);
        NodeLabel {
            width,
            height,
            ..NodeLabel::default()
        }
    };
    for cluster in &graph.clusters {
        g.set_node(cluster.id.clone(), Some(NodeLabel::default()));
        let label = label_id(&cluster.id);
        let (_, columns) = visible_text(&cluster.label);
        g.set_node(
            label.clone(),
            Some(NodeLabel {
                width: text_width(columns) + 2.0 * CLUSTER_LABEL_PADDING_X,
                height: CLUSTER_LABEL_HEIGHT,
                ..NodeLabel::default()
            }),
        );
        g.set_parent(&label, Some(&cluster.id));
        for node in &cluster.nodes {
            g.set_node(node.id.clone(), Some(sized(node)));
            g.set_parent(&node.id, Some(&cluster.id));
        }
    }
    for node in &graph.resources {
        g.set_node(node.id.clone(), Some(sized(node)));
    }
    let resources: BTreeSet<&str> = graph.resources.iter().map(|n| n.id.as_str()).collect();
    for (i, (from, to)) in graph.edges.iter().enumerate() {
        // A topic feeding a source sits two layers up, so the source's cluster has the layer
        // between them for its label.
        let minlen = if resources.contains(from.as_str()) {
            2
        } else {
            1
        };
        g.set_edge(
            from.clone(),
            to.clone(),
            Some(EdgeLabel {
                minlen,
                ..EdgeLabel::default()
            }),
            Some(&i.to_string()),
        );
    }
    for cluster in &graph.clusters {
        for entry in entry_nodes(graph, cluster) {
            g.set_edge(
                label_id(&cluster.id),
                entry.to_string(),
                Some(EdgeLabel::default()),
                Some("label"),
            );
        }
    }
    g
}

/// The id of a cluster's label node. Graph ids never contain `/`.
fn label_id(cluster: &str) -> String {
    format!("{cluster}/label")
}

/// The nodes of a cluster no other node of it leads to (its sources, normally), or its first
/// node when every node has a predecessor in it (a cycle).
fn entry_nodes<'a>(graph: &Graph, cluster: &'a Cluster) -> Vec<&'a str> {
    let members: BTreeSet<&str> = cluster.nodes.iter().map(|n| n.id.as_str()).collect();
    let fed: BTreeSet<&str> = graph
        .edges
        .iter()
        .filter(|(from, to)| from != to && members.contains(from.as_str()))
        .map(|(_, to)| to.as_str())
        .collect();
    let entries: Vec<&str> = cluster
        .nodes
        .iter()
        .map(|n| n.id.as_str())
        .filter(|id| !fed.contains(id))
        .collect();
    if entries.is_empty() {
        cluster
            .nodes
            .iter()
            .take(1)
            .map(|n| n.id.as_str())
            .collect()
    } else {
        entries
    }
}

fn placed(graph: &Graph, g: &DagreGraph<NodeLabel, EdgeLabel>) -> Result<Layout, LayoutError> {
    let rect_of = |id: &str| -> Result<Rect, LayoutError> {
        let label = g
            .node(id)
            .ok_or_else(|| LayoutError::Layout(format!("node {id} vanished")))?;
        match (label.x, label.y) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => {
                Ok(Rect::around(x, y, label.width, label.height))
            }
            _ => Err(LayoutError::Layout(format!("node {id} has no position"))),
        }
    };
    let mut clusters = Vec::with_capacity(graph.clusters.len());
    let mut nodes = Vec::new();
    for (index, cluster) in graph.clusters.iter().enumerate() {
        clusters.push(PlacedCluster {
            id: cluster.id.clone(),
            kind: cluster.kind,
            label: cluster.label.clone(),
            rect: rect_of(&cluster.id)?,
            label_rect: rect_of(&label_id(&cluster.id))?,
        });
        for node in &cluster.nodes {
            nodes.push(placed_node(node, Some(index), rect_of(&node.id)?));
        }
    }
    for node in &graph.resources {
        nodes.push(placed_node(node, None, rect_of(&node.id)?));
    }
    let mut edges = Vec::with_capacity(graph.edges.len());
    for (i, (from, to)) in graph.edges.iter().enumerate() {
        let points = g
            .edge(from, to, Some(&i.to_string()))
            .map(|label| {
                label
                    .points
                    .iter()
                    .map(|p| Point { x: p.x, y: p.y })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        if points.len() < 2 || points.iter().any(|p| !p.x.is_finite() || !p.y.is_finite()) {
            return Err(LayoutError::Layout(format!(
                "edge {from} -> {to} has no route"
            )));
        }
        edges.push(PlacedEdge {
            from: from.clone(),
            to: to.clone(),
            points,
        });
    }
    let mut layout = Layout {
        width: 0.0,
        height: 0.0,
        clusters,
        nodes,
        edges,
    };
    fit(&mut layout);
    Ok(layout)
}

fn placed_node(node: &GraphNode, cluster: Option<usize>, rect: Rect) -> PlacedNode {
    PlacedNode {
        id: node.id.clone(),
        name: node.label.clone(),
        text: visible_text(&node.label).0,
        shape: node.shape,
        cluster,
        rect,
    }
}

/// Moves everything so the bounding box of boxes and edge routes (dagre leaves routes out of
/// its own) starts at the margin, and sets the size.
fn fit(layout: &mut Layout) {
    let rects = layout
        .clusters
        .iter()
        .map(|c| c.rect)
        .chain(layout.nodes.iter().map(|n| n.rect));
    let points = layout.edges.iter().flat_map(|e| e.points.iter().copied());
    let mut min = Point {
        x: f64::INFINITY,
        y: f64::INFINITY,
    };
    let mut max = Point {
        x: f64::NEG_INFINITY,
        y: f64::NEG_INFINITY,
    };
    let corners = rects
        .flat_map(|r| {
            [
                Point { x: r.x, y: r.y },
                Point {
                    x: r.right(),
                    y: r.bottom(),
                },
            ]
        })
        .chain(points);
    for p in corners {
        min.x = min.x.min(p.x);
        min.y = min.y.min(p.y);
        max.x = max.x.max(p.x);
        max.y = max.y.max(p.y);
    }
    if !min.x.is_finite() {
        layout.width = 2.0 * MARGIN;
        layout.height = 2.0 * MARGIN;
        return;
    }
    let (dx, dy) = (MARGIN - min.x, MARGIN - min.y);
    for rect in layout
        .clusters
        .iter_mut()
        .flat_map(|c| [&mut c.rect, &mut c.label_rect])
        .chain(layout.nodes.iter_mut().map(|n| &mut n.rect))
    {
        rect.x += dx;
        rect.y += dy;
    }
    for p in layout.edges.iter_mut().flat_map(|e| e.points.iter_mut()) {
        p.x += dx;
        p.y += dy;
    }
    layout.width = max.x - min.x + 2.0 * MARGIN;
    layout.height = max.y - min.y + 2.0 * MARGIN;
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the layout library panicked".to_string())
}

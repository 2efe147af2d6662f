//! One topology drawn as a standalone SVG document: what `kafka-streams-groups --describe
//! --topology --output svg` prints and what the daemon's web page shows.
//!
//! The drawing is the processing graph of [`crate::graph`] laid out by [`crate::layout`]:
//! sub-topologies and global stores are labelled boxes, sources, processors and sinks are nodes
//! inside them, topics and stores are nodes of their own outside, and arrows go topic → source,
//! node → successor, processor → store and sink → topic.
//!
//! The document is meant to be both a file and a fragment of a web page:
//! - every node, topic and store is one `<g class="node">` with `data-kind` (`source`,
//!   `processor`, `sink`, `topic` or `store`), `data-name` (the exact name), `data-id` (the
//!   graph's synthetic id, which edges refer to) and a `<title>` holding the name;
//!   sub-topologies are `<g class="cluster">` with `data-kind` `subtopology` or
//!   `global-store`; edges are `<g class="edge">` with `data-from` and `data-to` ids;
//! - no `id` attributes, no `<style>` and no script, so several drawings can be inlined in one
//!   HTML page without clashing, and the page's CSS (colours are presentation attributes)
//!   wins over the drawing's;
//! - `width`, `height` and `viewBox` give the natural size, so a browser scrolls a large one.
//!
//! Names are escaped for XML text and attributes alike. Characters XML 1.0 cannot carry at all
//! (control characters other than tab, line feed and carriage return, U+FFFE, U+FFFF) are
//! replaced by U+FFFD; tab, line feed and carriage return are written as character references
//! so that attribute values keep them.

use std::fmt::Write as _;

use crate::graph::{build, ClusterKind, Shape};
use crate::layout::{
    layout, visible_text, Layout, LayoutError, PlacedCluster, PlacedEdge, PlacedNode, Point,
};
use crate::StreamsGroupTopologyDescription;

/// The font stack of every text: monospaced, which [`crate::layout`] measures for.
pub const FONT_FAMILY: &str =
    "ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace";

const ARROW_LENGTH: f64 = 8.0;
const ARROW_HALF_WIDTH: f64 = 4.0;

/// Draws `topology` (the description of streams group `group_id`) as a standalone SVG document,
/// ending with a newline. The same input gives the same bytes.
pub fn render_svg(
    group_id: &str,
    topology: &StreamsGroupTopologyDescription,
) -> Result<String, LayoutError> {
    let laid_out = layout(&build(topology))?;
    Ok(draw(group_id, &laid_out))
}

/// Draws a laid-out graph; [`render_svg`] is this after [`layout`].
pub fn draw(group_id: &str, layout: &Layout) -> String {
    let mut out = String::with_capacity(1024 + 600 * layout.nodes.len());
    let (width, height) = (num(layout.width), num(layout.height));
    let title = format!("Topology of streams group {group_id}");
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"{FONT_FAMILY}\" font-size=\"{}\" \
         class=\"kcoord-topology\">",
        num(crate::layout::FONT_SIZE),
    );
    let _ = writeln!(out, "<title>{}</title>", escape(&title));
    out.push_str("<g class=\"clusters\">\n");
    for cluster in &layout.clusters {
        cluster_element(&mut out, cluster);
    }
    out.push_str("</g>\n<g class=\"edges\">\n");
    for edge in &layout.edges {
        edge_element(&mut out, edge);
    }
    out.push_str("</g>\n<g class=\"nodes\">\n");
    for node in &layout.nodes {
        node_element(&mut out, node);
    }
    out.push_str("</g>\n</svg>\n");
    out
}

fn cluster_element(out: &mut String, cluster: &PlacedCluster) {
    let (kind, fill, stroke, dash) = match cluster.kind {
        ClusterKind::Subtopology => ("subtopology", "#f7f9fc", "#8a9bb5", ""),
        ClusterKind::GlobalStore => (
            "global-store",
            "#fbf7fd",
            "#a98bbd",
            " stroke-dasharray=\"6 3\"",
        ),
    };
    let (r, l) = (cluster.rect, cluster.label_rect);
    let label = escape(&cluster.label);
    let _ = writeln!(
        out,
        "<g class=\"cluster\" data-kind=\"{kind}\" data-name=\"{label}\"><title>{label}</title>\
         <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\" fill=\"{fill}\" \
         stroke=\"{stroke}\"{dash}/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" \
         dominant-baseline=\"central\" fill=\"#42526e\">{}</text></g>",
        num(r.x),
        num(r.y),
        num(r.width),
        num(r.height),
        num(l.x + l.width / 2.0),
        num(l.y + l.height / 2.0),
        escape(&visible_text(&cluster.label).0),
    );
}

fn edge_element(out: &mut String, edge: &PlacedEdge) {
    let _ = writeln!(
        out,
        "<g class=\"edge\" data-from=\"{}\" data-to=\"{}\"><path d=\"{}\" fill=\"none\" \
         stroke=\"#5e6c84\" stroke-width=\"1.2\"/><polygon points=\"{}\" fill=\"#5e6c84\"/></g>",
        escape(&edge.from),
        escape(&edge.to),
        path_data(&edge.points),
        arrowhead(&edge.points),
    );
}

fn node_element(out: &mut String, node: &PlacedNode) {
    let name = escape(&node.name);
    let r = node.rect;
    let _ = write!(
        out,
        "<g class=\"node\" data-kind=\"{}\" data-name=\"{name}\" data-id=\"{}\" \
         transform=\"translate({} {})\"><title>{name}</title>",
        node.shape.name(),
        escape(&node.id),
        num(r.x),
        num(r.y),
    );
    shape_element(out, node.shape, r.width, r.height);
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" dominant-baseline=\"central\" \
         fill=\"#172b4d\">{}</text></g>",
        num(r.width / 2.0),
        num(text_center_y(node.shape, r.height)),
        escape(&node.text),
    );
}

/// The node's outline in its own coordinates (`0..w` × `0..h`). Sources point down into the
/// sub-topology and sinks up out of it, as Graphviz's `invhouse` and `house`.
fn shape_element(out: &mut String, shape: Shape, w: f64, h: f64) {
    let (fill, stroke) = colours(shape);
    let paint = format!("fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.2\"");
    let _ = match shape {
        Shape::Source => write!(
            out,
            "<polygon points=\"0,0 {w},0 {w},{a} {m},{h} 0,{a}\" {paint}/>",
            w = num(w),
            a = num(h * 0.7),
            m = num(w / 2.0),
            h = num(h),
        ),
        Shape::Sink => write!(
            out,
            "<polygon points=\"{m},0 {w},{a} {w},{h} 0,{h} 0,{a}\" {paint}/>",
            w = num(w),
            a = num(h * 0.3),
            m = num(w / 2.0),
            h = num(h),
        ),
        Shape::Processor => write!(
            out,
            "<rect width=\"{}\" height=\"{}\" rx=\"3\" {paint}/>",
            num(w),
            num(h)
        ),
        Shape::Topic => write!(
            out,
            "<rect width=\"{}\" height=\"{}\" rx=\"{}\" {paint}/>",
            num(w),
            num(h),
            num(h / 2.0)
        ),
        Shape::Store => {
            // A cylinder: the body with rounded ends, then the front of the top rim.
            let ry = 5.0;
            write!(
                out,
                "<path d=\"M0,{ry} A{rx},{ry} 0 0 1 {w},{ry} V{b} A{rx},{ry} 0 0 1 0,{b} Z\" \
                 {paint}/><path d=\"M0,{ry} A{rx},{ry} 0 0 0 {w},{ry}\" fill=\"none\" \
                 stroke=\"{stroke}\" stroke-width=\"1.2\"/>",
                ry = num(ry),
                rx = num(w / 2.0),
                w = num(w),
                b = num(h - ry),
            )
        }
    };
}

fn colours(shape: Shape) -> (&'static str, &'static str) {
    match shape {
        Shape::Source => ("#e3fcef", "#36b37e"),
        Shape::Processor => ("#deebff", "#4c9aff"),
        Shape::Sink => ("#fff0e0", "#ff8b00"),
        Shape::Topic => ("#fffae6", "#c9a100"),
        Shape::Store => ("#eae6ff", "#8777d9"),
    }
}

/// Where a label sits vertically: the middle of the box, shifted away from a source's point,
/// a sink's roof and a store's rim.
fn text_center_y(shape: Shape, h: f64) -> f64 {
    match shape {
        Shape::Source => h * 0.4,
        Shape::Sink => h * 0.62,
        Shape::Store => h / 2.0 + 2.5,
        _ => h / 2.0,
    }
}

/// A polyline through the route, its corners rounded by quadratic curves that end at the
/// midpoints of the segments, stopping at the arrowhead's base.
fn path_data(points: &[Point]) -> String {
    let mut d = String::new();
    let Some(first) = points.first() else {
        return d;
    };
    let _ = write!(d, "M{},{}", num(first.x), num(first.y));
    let corners = points.len().saturating_sub(1);
    for i in 1..corners {
        let (corner, next) = (points[i], points[i + 1]);
        let _ = write!(
            d,
            " Q{},{} {},{}",
            num(corner.x),
            num(corner.y),
            num((corner.x + next.x) / 2.0),
            num((corner.y + next.y) / 2.0)
        );
    }
    let end = shortened_end(points);
    let _ = write!(d, " L{},{}", num(end.x), num(end.y));
    d
}

/// The route's end pulled back by the arrowhead's length, so the line stops at its base.
fn shortened_end(points: &[Point]) -> Point {
    let (Some(&tip), Some(&before)) = (points.last(), points.iter().rev().nth(1)) else {
        return Point { x: 0.0, y: 0.0 };
    };
    let (ux, uy) = unit(before, tip);
    Point {
        x: tip.x - ux * ARROW_LENGTH,
        y: tip.y - uy * ARROW_LENGTH,
    }
}

fn arrowhead(points: &[Point]) -> String {
    let (Some(&tip), Some(&before)) = (points.last(), points.iter().rev().nth(1)) else {
        return String::new();
    };
    let (ux, uy) = unit(before, tip);
    let base = Point {
        x: tip.x - ux * ARROW_LENGTH,
        y: tip.y - uy * ARROW_LENGTH,
    };
    let (px, py) = (-uy * ARROW_HALF_WIDTH, ux * ARROW_HALF_WIDTH);
    format!(
        "{},{} {},{} {},{}",
        num(tip.x),
        num(tip.y),
        num(base.x + px),
        num(base.y + py),
        num(base.x - px),
        num(base.y - py)
    )
}

/// The unit vector from `a` to `b`; straight down when they coincide.
fn unit(a: Point, b: Point) -> (f64, f64) {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let length = (dx * dx + dy * dy).sqrt();
    if length < 1e-9 {
        (0.0, 1.0)
    } else {
        (dx / length, dy / length)
    }
}

/// A coordinate with at most one decimal, without a trailing `.0` (`12`, `12.5`, `-3`).
fn num(value: f64) -> String {
    let rounded = (value * 10.0).round() / 10.0;
    // -0 would print as "-0".
    let rounded = if rounded == 0.0 { 0.0 } else { rounded };
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

/// Text for XML character data and double-quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if is_xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// XML 1.0's `Char` production (tab, line feed and carriage return are handled before).
fn is_xml_char(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_quotes_and_characters_xml_cannot_carry() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\ny\tz\r"), "x&#10;y&#9;z&#13;");
        assert_eq!(
            escape("\u{1}\u{FFFE}é\u{1F600}"),
            "\u{FFFD}\u{FFFD}é\u{1F600}"
        );
    }

    #[test]
    fn numbers_have_one_decimal_at_most() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.25), "12.3");
        assert_eq!(num(-0.01), "0");
        assert_eq!(num(-3.0), "-3");
    }
}

//! Renderings of a topology description: Kafka's text, and (beyond Kafka) JSON, DOT, Mermaid
//! and SVG. All are pure functions returning the exact bytes to print. DOT, Mermaid and SVG
//! draw the processing graph of [`kcoord_topology::graph`]; SVG lays it out itself
//! ([`kcoord_topology::svg`]).

mod dot;
mod json;
mod mermaid;
mod text;

pub use dot::format_dot;
pub use json::format_json;
pub use kcoord_topology::layout::LayoutError;
pub use kcoord_topology::svg::render_svg;
pub use mermaid::format_mermaid;
pub use text::format_topology;

/// The `--output` choices of `--describe --topology`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// Kafka's `kafka-streams-groups.sh --describe --topology` text.
    #[default]
    Text,
    /// The client model, with predecessors, as pretty JSON.
    Json,
    /// A Graphviz digraph.
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
    /// A standalone SVG drawing, laid out (one group only: a file holds one drawing).
    Svg,
}

impl OutputFormat {
    /// Everything the tool prints for one group's topology in this format. For text that is the
    /// formatter's string plus the newline of Kafka's `println`. Only SVG can fail (its layout
    /// library failing).
    pub fn render(
        self,
        group_id: &str,
        topology: &crate::topology::StreamsGroupTopologyDescription,
    ) -> Result<String, LayoutError> {
        Ok(match self {
            OutputFormat::Text => format_topology(topology) + "\n",
            OutputFormat::Json => format_json(topology),
            OutputFormat::Dot => format_dot(group_id, topology),
            OutputFormat::Mermaid => format_mermaid(group_id, topology),
            OutputFormat::Svg => render_svg(group_id, topology)?,
        })
    }

    /// Whether one output holds at most one group's topology.
    pub fn single_group(self) -> bool {
        self == OutputFormat::Svg
    }
}

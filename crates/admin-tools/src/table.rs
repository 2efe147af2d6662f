//! Plain-text tables: a header row and value rows, every column left-aligned and padded to its
//! widest cell, columns two spaces apart, no trailing blanks.

/// Renders `header` and `rows` (each as long as `header`) with a newline after every line.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| (*h).to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            let pad = widths
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_sub(cell.chars().count());
            line.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_to_the_widest_cell() {
        let rows = vec![
            vec!["1".to_string(), "localhost".to_string(), "x".to_string()],
            vec!["10".to_string(), "h".to_string(), String::new()],
        ];
        assert_eq!(
            render(&["ID", "HOST", "RACK"], &rows),
            "ID  HOST       RACK\n1   localhost  x\n10  h\n"
        );
    }
}

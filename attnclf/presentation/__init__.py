"""What people look at, drawn in one place: matplotlib figures, HTML shading and Markdown summaries."""

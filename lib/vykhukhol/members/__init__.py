"""Who is on which list: joining and leaving, the own page's data, suppression, import and export."""

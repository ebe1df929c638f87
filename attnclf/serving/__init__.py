"""Serving trained models over HTTP (`attnclf serve`): the JSON API, the explorer's pages, dynamic batching."""

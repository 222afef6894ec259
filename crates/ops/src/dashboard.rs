//! The live web dashboard at `/`: one HTML page, its script and its stylesheet, compiled into
//! the binary (`web/`), with no library and nothing fetched at run time. The page reads the
//! JSON API and the event stream (see `web/app.js`).

use axum::http::header;
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("../web/index.html");
const SCRIPT: &str = include_str!("../web/app.js");
const STYLE: &str = include_str!("../web/style.css");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body)
        .into_response()
}

/// `GET /`: the dashboard page.
pub async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

/// `GET /assets/app.js`.
pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /assets/style.css`.
pub async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

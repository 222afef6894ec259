#!/usr/bin/env python3
"""Checks a built mdBook (default docs/book): every internal link and image resolves to a file of
the book, and every #fragment to an id in the target page; with --diagrams, every Mermaid
diagram renders in headless Chromium (an SVG per diagram, no "Syntax error").

Exit 0 when everything is right, 1 with one line per problem otherwise.
Usage: python3 docs/check.py [BOOK_DIR] [--diagrams]
"""

import html.parser
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

EXTERNAL = ("http://", "https://", "mailto:", "javascript:", "data:", "//")


class Page(html.parser.HTMLParser):
    """The ids a page defines and the links it makes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []  # (tag, attribute, value)
        self.mermaid_blocks = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for attr in ("href", "src"):
            if attrs.get(attr) is not None and tag in ("a", "link", "img", "script", "iframe"):
                self.links.append((tag, attr, attrs[attr]))
        if tag == "code" and "language-mermaid" in (attrs.get("class") or "").split():
            self.mermaid_blocks += 1


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def html_files(root):
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                yield os.path.join(dirpath, name)


def check_links(root):
    root = os.path.realpath(root)
    pages = {os.path.realpath(p): parse(p) for p in html_files(root)}
    problems = []
    for path, page in sorted(pages.items()):
        rel = os.path.relpath(path, root)
        for tag, attr, value in page.links:
            if not value or value.startswith(EXTERNAL):
                continue
            parts = urllib.parse.urlsplit(value)
            if parts.scheme:
                problems.append(f"{rel}: <{tag} {attr}={value!r}>: unexpected scheme")
                continue
            target_path = urllib.parse.unquote(parts.path)
            if target_path == "":
                target = path
            elif target_path.startswith("/"):
                target = os.path.realpath(os.path.join(root, target_path.lstrip("/")))
            else:
                target = os.path.realpath(os.path.join(os.path.dirname(path), target_path))
            if os.path.isdir(target):
                target = os.path.join(target, "index.html")
            if not (target == root or target.startswith(root + os.sep)):
                problems.append(f"{rel}: {value}: points outside the book")
                continue
            if not os.path.isfile(target):
                problems.append(f"{rel}: {value}: no such file in the book")
                continue
            fragment = urllib.parse.unquote(parts.fragment)
            if fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else parse(target).ids
                if fragment not in ids:
                    problems.append(f"{rel}: {value}: no id {fragment!r} in the target page")
    return problems, pages


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def check_diagrams(root, pages):
    browser = chromium()
    if browser is None:
        return ["--diagrams: no chromium on PATH (apt-get install chromium)"]
    problems = []
    with tempfile.TemporaryDirectory() as profile:
        for path, page in sorted(pages.items()):
            if page.mermaid_blocks == 0 or os.path.basename(path) == "print.html":
                continue
            rel = os.path.relpath(path, root)
            result = subprocess.run(
                [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 f"--user-data-dir={profile}", "--virtual-time-budget=15000", "--dump-dom",
                 "file://" + path],
                capture_output=True, text=True, timeout=120)
            dom = result.stdout
            rendered = Page()
            rendered.feed(dom)
            drawn = dom.count('<pre class="mermaid"') if "<svg" in dom else 0
            svgs = dom.count('aria-roledescription=')
            if "Syntax error" in dom or "Parse error" in dom:
                problems.append(f"{rel}: a diagram has a Mermaid syntax error")
            elif drawn != page.mermaid_blocks or svgs < page.mermaid_blocks:
                problems.append(
                    f"{rel}: {page.mermaid_blocks} diagrams in the source, "
                    f"{min(drawn, svgs)} rendered (chromium exit {result.returncode})")
            else:
                print(f"  {rel}: {page.mermaid_blocks} diagrams rendered")
    return problems


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "book")
    if not os.path.isfile(os.path.join(root, "index.html")):
        print(f"{root}: not a built book (run `mdbook build docs` first)")
        return 1
    problems, pages = check_links(root)
    links = sum(len(p.links) for p in pages.values())
    print(f"checked {links} links in {len(pages)} pages")
    if "--diagrams" in argv:
        problems += check_diagrams(root, pages)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

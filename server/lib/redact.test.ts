import { describe, expect, it } from "vitest";
import { fingerprint, isRedactedUrl, redactUrl } from "./redact";

/** A webhook URL shown without its credential (docs/alerts.md "Secrets"). */

const SLACK = "https://hooks.slack.com/services/T000/B000/XXXXXXXX";

describe("redactUrl", () => {
  it("keeps the scheme and host and a fingerprint of the whole URL, nothing of its path", () => {
    expect(redactUrl(SLACK)).toBe(`https://hooks.slack.com/…#${fingerprint(SLACK)}`);
    expect(redactUrl(SLACK)).not.toMatch(/services|T000|B000|XXXXXXXX/);
    expect(fingerprint(SLACK)).toMatch(/^[0-9a-f]{8}$/);
  });

  it("never shows a user, password, query or fragment; keeps a port", () => {
    const url = "http://user:pa55@hooks.example.com:8443/in?token=abc#frag";
    expect(redactUrl(url)).toBe(`http://hooks.example.com:8443/…#${fingerprint(url)}`);
  });

  it("tells two URLs of one host apart, and changes nothing when redacting twice", () => {
    const other = "https://hooks.slack.com/services/T000/B000/YYYYYYYY";
    expect(redactUrl(other)).not.toBe(redactUrl(SLACK));
    expect(redactUrl(redactUrl(SLACK))).toBe(redactUrl(SLACK));
    expect(isRedactedUrl(redactUrl(SLACK))).toBe(true);
    expect(isRedactedUrl(SLACK)).toBe(false);
  });

  it("shows only the fingerprint of what is not an http(s) URL", () => {
    expect(redactUrl("hooks.slack.com/services/T000/B000/XXXXXXXX")).toMatch(/^…#[0-9a-f]{8}$/);
    expect(redactUrl("file:///etc/passwd")).toMatch(/^…#[0-9a-f]{8}$/);
  });
});

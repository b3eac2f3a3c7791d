"""A test identity provider with the standard library only: an RSA-2048 key made here
(Miller-Rabin over `secrets` randomness), RS256 tokens (RSASSA-PKCS1-v1_5 with SHA-256,
RFC 8017 §8.2: the signature is EM^d mod n, Python's integers do it), and its JWKS served
over HTTP on 127.0.0.1 from a thread. For tests only: no constant-time arithmetic, no
blinding.
"""

import base64
import hashlib
import http.server
import json
import secrets
import threading
import time

_SMALL_PRIMES = [p for p in range(3, 2000) if all(p % q for q in range(2, int(p ** 0.5) + 1))]
# DER prefix of DigestInfo for SHA-256 (RFC 8017 §9.2, note 1).
_SHA256_PREFIX = bytes.fromhex("3031300d060960864801650304020105000420")


def _probably_prime(n, rounds=40):
    if n < 2:
        return False
    for p in _SMALL_PRIMES:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for _ in range(rounds):
        a = secrets.randbelow(n - 3) + 2
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits, e):
    while True:
        candidate = secrets.randbits(bits) | (1 << (bits - 1)) | (1 << (bits - 2)) | 1
        if (candidate - 1) % e and _probably_prime(candidate):
            return candidate


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int_bytes(n):
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


class RsaKey:
    def __init__(self, bits=2048, e=65537):
        while True:
            p, q = _prime(bits // 2, e), _prime(bits // 2, e)
            n = p * q
            if p != q and n.bit_length() == bits:
                break
        self.n, self.e = n, e
        self.d = pow(e, -1, (p - 1) * (q - 1))
        self.k = (n.bit_length() + 7) // 8

    def sign(self, message):
        digest_info = _SHA256_PREFIX + hashlib.sha256(message).digest()
        em = b"\x00\x01" + b"\xff" * (self.k - len(digest_info) - 3) + b"\x00" + digest_info
        s = pow(int.from_bytes(em, "big"), self.d, self.n)
        return s.to_bytes(self.k, "big")

    def verify(self, message, signature):
        em = pow(int.from_bytes(signature, "big"), self.e, self.n).to_bytes(self.k, "big")
        return em.endswith(_SHA256_PREFIX + hashlib.sha256(message).digest())

    def jwk(self, kid):
        return {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
                "n": b64url(_int_bytes(self.n)), "e": b64url(_int_bytes(self.e))}


class Idp:
    """Serves /jwks (and RFC 8414 metadata) on 127.0.0.1; mints RS256 tokens."""

    KID = "repro-rsa-1"

    def __init__(self):
        self.key = RsaKey()
        idp = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                if self.path == "/jwks":
                    doc = {"keys": [idp.key.jwk(Idp.KID)]}
                elif self.path == "/.well-known/oauth-authorization-server":
                    doc = {"issuer": idp.issuer, "jwks_uri": idp.jwks_url}
                else:
                    self.send_error(404)
                    return
                body = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.jwks_url = f"{self.issuer}/jwks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, audience, subject, tenant_claim=None, tenant=None, lifetime=600):
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": audience, "sub": subject, "exp": now + lifetime,
                  "nbf": now, "iat": now, "scope": "mcp:use"}
        if tenant_claim:
            claims[tenant_claim] = tenant
        header = {"alg": "RS256", "typ": "JWT", "kid": Idp.KID}
        signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "."
                         + b64url(json.dumps(claims, separators=(",", ":")).encode()))
        return signing_input + "." + b64url(self.key.sign(signing_input.encode()))

    def close(self):
        self.server.shutdown()


if __name__ == "__main__":
    start = time.time()
    idp = Idp()
    tok = idp.token("http://x/mcp", "u1", "org", "A")
    head, claims, sig = tok.split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    ok = idp.key.verify(f"{head}.{claims}".encode(), base64.urlsafe_b64decode(pad(sig)))
    print(f"key in {time.time() - start:.1f}s, self-verify {ok}, token {len(tok)} chars")
    idp.close()

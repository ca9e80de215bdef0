#!/bin/sh
# Writes test/fixtures/legacy-hashes.json: password hashes in every imported format, each made by
# the software that makes it in the wild (PHP's password_hash and libsodium as WordPress and Magento
# call them, Django's own hashers, passlib), never by this service's code. Run once by a maintainer;
# the file is checked in. Needs Debian's php-cli, python3-django, python3-passlib, python3-bcrypt and
# python3-argon2 (apt-get install them), and /usr/bin/python3.
set -eu
cd "$(dirname "$0")/.."
out=test/fixtures/legacy-hashes.json
mkdir -p test/fixtures
php_vectors=$(mktemp)
python_vectors=$(mktemp)
trap 'rm -f "$php_vectors" "$python_vectors"' EXIT

php -r '
$passwords = ["correct horse 1843", "Grüße aus Köln 2026"];
$out = [];
foreach ($passwords as $pw) {
  $add = function ($format, $source, $hash) use (&$out, $pw) {
    $out[] = ["format" => $format, "source" => $source, "password" => $pw, "hash" => $hash];
  };
  $add("bcrypt", "PHP password_hash, PASSWORD_BCRYPT cost 10 ($2y$)", password_hash($pw, PASSWORD_BCRYPT, ["cost" => 10]));
  $add("argon2", "PHP password_hash, PASSWORD_ARGON2ID", password_hash($pw, PASSWORD_ARGON2ID));
  $add("argon2", "PHP password_hash, PASSWORD_ARGON2I", password_hash($pw, PASSWORD_ARGON2I));
  // WordPress 6.8 wp_hash_password: bcrypt of the base64 HMAC-SHA384 of the trimmed password.
  $pre = base64_encode(hash_hmac("sha384", trim($pw), "wp-sha384", true));
  $add("wordpress-bcrypt", "WordPress 6.8 wp_hash_password", "\$wp" . password_hash($pre, PASSWORD_BCRYPT, ["cost" => 10]));
  // Magento 2 Encryptor::getHash: a 32-character salt, then SHA-256 (1) or Argon2id13 (2, 3_…).
  $salt = substr(str_replace(["+", "/", "="], "", base64_encode(random_bytes(48))), 0, 32);
  $argon = function ($data, $bytes, $ops, $mem) use ($salt) {
    return bin2hex(sodium_crypto_pwhash($bytes, $data, substr($salt, 0, SODIUM_CRYPTO_PWHASH_SALTBYTES), $ops, $mem, SODIUM_CRYPTO_PWHASH_ALG_ARGON2ID13));
  };
  $ops = SODIUM_CRYPTO_PWHASH_OPSLIMIT_INTERACTIVE;
  $mem = SODIUM_CRYPTO_PWHASH_MEMLIMIT_INTERACTIVE;
  $add("magento", "Magento 2 Encryptor, version 1 (SHA-256)", implode(":", [hash("sha256", $salt . $pw), $salt, "1"]));
  $add("magento", "Magento 2 Encryptor, version 2 (Argon2id13)", implode(":", [$argon($pw, 32, $ops, $mem), $salt, "2"]));
  $add("magento", "Magento 2 Encryptor, version 3 (Argon2id13, limits named)", implode(":", [$argon($pw, 32, $ops, $mem), $salt, "3_32_{$ops}_{$mem}"]));
  $add("magento", "Magento 2 Encryptor, a version 1 hash upgraded in place to 3", implode(":", [$argon(hash("sha256", $salt . $pw), 32, $ops, $mem), $salt, "1:3_32_{$ops}_{$mem}"]));
}
echo json_encode($out, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
' > "$php_vectors"

/usr/bin/python3 - > "$python_vectors" <<'PYTHON'
import base64, hashlib, json, os
from passlib import hash as passlib_hash
import django
from django.conf import settings
settings.configure(PASSWORD_HASHERS=[
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
])
django.setup()
from django.contrib.auth.hashers import make_password

out = []
for pw in ["correct horse 1843", "Grüße aus Köln 2026"]:
    def add(fmt, source, hashed):
        out.append({"format": fmt, "source": source, "password": pw, "hash": hashed})
    add("phpass", "passlib phpass ($P$, WordPress before 6.8)", passlib_hash.phpass.using(ident="P", rounds=13).hash(pw))
    add("phpass", "passlib phpass ($H$, phpBB)", passlib_hash.phpass.using(ident="H").hash(pw))
    add("bcrypt", "passlib bcrypt ($2a$)", passlib_hash.bcrypt.using(ident="2a", rounds=10).hash(pw))
    add("bcrypt", "passlib bcrypt ($2b$)", passlib_hash.bcrypt.using(ident="2b", rounds=10).hash(pw))
    add("pbkdf2-sha256", "passlib pbkdf2_sha256", passlib_hash.pbkdf2_sha256.hash(pw))
    add("pbkdf2-sha512", "passlib pbkdf2_sha512", passlib_hash.pbkdf2_sha512.hash(pw))
    # The PHC string form (i=…): Python's own PBKDF2, written as the PHC format specifies.
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", pw.encode(), salt, 100000, 32)
    b64 = lambda data: base64.b64encode(data).decode().rstrip("=")
    add("pbkdf2-sha256", "hashlib.pbkdf2_hmac in the PHC string form", "$pbkdf2-sha256$i=100000,l=32$%s$%s" % (b64(salt), b64(digest)))
    add("scrypt", "passlib scrypt", passlib_hash.scrypt.using(rounds=14).hash(pw))
    add("django-pbkdf2-sha256", "Django 3.2 PBKDF2PasswordHasher", make_password(pw, hasher="pbkdf2_sha256"))
    add("django-argon2", "Django 3.2 Argon2PasswordHasher", make_password(pw, hasher="argon2"))
    add("django-bcrypt-sha256", "Django 3.2 BCryptSHA256PasswordHasher", make_password(pw, hasher="bcrypt_sha256"))
print(json.dumps(out, ensure_ascii=False))
PYTHON

node -e '
const fs = require("node:fs");
const [php, python, out] = process.argv.slice(1);
const vectors = [...JSON.parse(fs.readFileSync(php, "utf8")), ...JSON.parse(fs.readFileSync(python, "utf8"))];
fs.writeFileSync(out, JSON.stringify(vectors, null, 2) + "\n");
console.log(`${vectors.length} vectors written to ${out}`);
' "$php_vectors" "$python_vectors" "$out"

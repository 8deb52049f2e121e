"""Signed webhooks: every call carries ``Trellis-Signature: t=<unix>,v1=<hex>`` over the timestamp and the exact
body; a missing, wrong or stale signature is refused with a JSON error and starts nothing."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from designer.models import Run, TriggerFire, Webhook, WebhookSignatureUse
from designer.triggers import services as triggers
from designer.triggers import signature
from designer.workflows import services as workflow_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(cast: Any, workflow: Any) -> Any:
    workflow_services.publish_workflow(actor=cast.editor, workflow=workflow, note="first")
    return workflow


@pytest.fixture
def signed(cast: Any, published: Any) -> triggers.NewWebhook:
    return triggers.create_webhook(actor=cast.editor, workflow=published, name="shop", mode="signed")


def _header(secret: str, body: bytes, t: int | None = None) -> str:
    """What a caller computes, written out here rather than through the module under test."""
    t = int(time.time()) if t is None else t
    return f"t={t},v1=" + hmac.new(secret.encode(), str(t).encode() + b"." + body, hashlib.sha256).hexdigest()


def _post(client: Any, hook: triggers.NewWebhook, body: bytes, header: str | None) -> Any:
    extra = {"HTTP_TRELLIS_SIGNATURE": header} if header is not None else {}
    return client.post(reverse("webhook-call", args=[hook.secret]), data=body, content_type="application/json",
                       **extra)


def _nothing_started() -> bool:
    return Run.objects.count() == 0 and TriggerFire.objects.count() == 0


BODY = b'{"amount": 12}'


def test_a_good_signature_starts_a_run_and_answers_202(client: Any, signed: triggers.NewWebhook) -> None:
    assert signed.signing_secret and signed.signing_secret.startswith("whsec_")
    response = _post(client, signed, BODY, _header(signed.signing_secret, BODY))
    assert response.status_code == 202, response.json()
    run = Run.objects.get(pk=response.json()["run_id"])
    assert run.input == {"amount": 12}
    assert list(signed.webhook.fires.values_list("run_id", flat=True)) == [run.pk]


def test_the_signing_secret_is_not_stored(signed: triggers.NewWebhook) -> None:
    assert signed.signing_secret is not None
    row = Webhook.objects.filter(pk=signed.webhook.pk).values().get()
    assert not any(signed.signing_secret in str(value) or signed.signing_secret[6:] in str(value)
                   for value in row.values())
    assert row["mode"] == "signed" and len(row["signing_salt"]) == 64


def test_a_missing_signature_is_refused_with_401(client: Any, signed: triggers.NewWebhook) -> None:
    for header in (None, "", "   "):
        response = _post(client, signed, BODY, header)
        assert response.status_code == 401, response.content
        assert response.json()["code"] == "trigger.signature_missing"
        assert "Trellis-Signature" in response.json()["message"]
    assert _nothing_started()


@pytest.mark.parametrize("case", ["other secret", "body changed", "timestamp changed", "malformed", "no v1",
                                  "bad t", "url secret as key"])
def test_a_wrong_signature_is_refused_with_401(client: Any, signed: triggers.NewWebhook, case: str) -> None:
    assert signed.signing_secret is not None
    now = int(time.time())
    header = {
        "other secret": _header("whsec_not-the-secret", BODY),
        "body changed": _header(signed.signing_secret, b'{"amount": 13}'),
        "timestamp changed": _header(signed.signing_secret, BODY, now).replace(f"t={now}", f"t={now - 1}"),
        "malformed": "sha256=abcdef",
        "no v1": f"t={now}",
        "bad t": _header(signed.signing_secret, BODY).replace("t=", "t=x"),
        "url secret as key": _header(signed.secret, BODY),
    }[case]
    response = _post(client, signed, BODY, header)
    assert response.status_code == 401, response.content
    assert response.json()["code"] == "trigger.signature_invalid" and response.json()["message"]
    assert _nothing_started()


# Well outside the window: the request takes its own time to arrive, so an offset of 301 s could fall back inside
# it on a slow machine. The exact edges are tested with an injected clock below.
@pytest.mark.parametrize("offset", [-400, -3600, 400])
def test_a_signature_outside_the_five_minute_window_is_refused(client: Any, signed: triggers.NewWebhook,
                                                                offset: int) -> None:
    assert signed.signing_secret is not None
    response = _post(client, signed, BODY, _header(signed.signing_secret, BODY, int(time.time()) + offset))
    assert response.status_code == 401
    assert response.json()["code"] == "trigger.signature_expired" and response.json()["window_seconds"] == 300
    assert ("in the future" in response.json()["message"]) == (offset > 0)
    assert _nothing_started()


def test_the_window_is_five_minutes_either_way(signed: triggers.NewWebhook) -> None:
    assert signed.signing_secret is not None
    t = 1_800_000_000
    for now in (t - 300, t + 300):
        body = json.dumps({"amount": now - t}).encode()  # one call each: the same call twice is a replay
        triggers.call_webhook(secret=signed.secret, body=body, signature_header=_header(signed.signing_secret,
                                                                                        body, t), now=now)
    header = _header(signed.signing_secret, BODY, t)
    for now in (t - 301, t + 301):
        with pytest.raises(signature.SignatureExpired):
            triggers.call_webhook(secret=signed.secret, body=BODY, signature_header=header, now=now)
    assert Run.objects.count() == 2


def test_a_signed_bad_body_is_400_and_starts_nothing(client: Any, signed: triggers.NewWebhook) -> None:
    assert signed.signing_secret is not None
    for body in (b'{"amount": "twelve"}', b"[1]", b"{not json"):
        response = _post(client, signed, body, _header(signed.signing_secret, body))
        assert response.status_code == 400, response.content
    assert _nothing_started()


def test_a_replay_inside_the_window_is_refused_and_starts_nothing(client: Any, signed: triggers.NewWebhook) -> None:
    assert signed.signing_secret is not None
    header = _header(signed.signing_secret, BODY)
    assert _post(client, signed, BODY, header).status_code == 202
    t, mac = header.split(",")
    # The captured request as it was, and with its signatures listed otherwise: the same timestamp and body.
    for again in (header, f"{t},v1={'0' * 64},{mac}"):
        response = _post(client, signed, BODY, again)
        assert response.status_code == 401, response.content
        assert response.json()["code"] == "trigger.signature_replayed"
        assert "already accepted" in response.json()["message"] and "t=" in response.json()["message"]
    assert Run.objects.count() == 1 and TriggerFire.objects.count() == 1
    # The same body under a new timestamp is a new call.
    later = _header(signed.signing_secret, BODY, int(t.removeprefix("t=")) + 1)
    assert _post(client, signed, BODY, later).status_code == 202


def test_an_accepted_call_is_remembered_in_the_database_until_its_window_passes(signed: triggers.NewWebhook) -> None:
    assert signed.signing_secret is not None
    t = 1_800_000_000
    header = _header(signed.signing_secret, BODY, t)
    triggers.call_webhook(secret=signed.secret, body=BODY, signature_header=header, now=t)
    use = WebhookSignatureUse.objects.get(webhook=signed.webhook)
    assert use.expires_at.timestamp() == t + signature.REPLAY_WINDOW
    with pytest.raises(signature.SignatureReplayed):
        triggers.call_webhook(secret=signed.secret, body=BODY, signature_header=header, now=t + 299)
    with pytest.raises(signature.SignatureExpired):
        triggers.call_webhook(secret=signed.secret, body=BODY, signature_header=header, now=t + 301)
    # Another worker knows it only through that row: without it the same call would start a second run.
    use.delete()
    triggers.call_webhook(secret=signed.secret, body=BODY, signature_header=header, now=t + 10)
    # A later call prunes the rows whose window has passed.
    body = b'{"amount": 1}'
    triggers.call_webhook(secret=signed.secret, body=body, signature_header=_header(signed.signing_secret, body,
                                                                                    t + 400), now=t + 400)
    assert list(WebhookSignatureUse.objects.values_list("expires_at", flat=True)) == [
        datetime.fromtimestamp(t + 400 + signature.REPLAY_WINDOW, tz=UTC)]
    assert Run.objects.count() == 3


def test_a_call_refused_for_its_body_is_not_remembered(client: Any, signed: triggers.NewWebhook) -> None:
    assert signed.signing_secret is not None
    body = b'{"amount": "twelve"}'
    header = _header(signed.signing_secret, body)
    assert [_post(client, signed, body, header).status_code for _ in range(2)] == [400, 400]
    assert not WebhookSignatureUse.objects.exists() and _nothing_started()


def test_one_of_several_signatures_may_match_for_rotation(client: Any, signed: triggers.NewWebhook) -> None:
    assert signed.signing_secret is not None
    good = _header(signed.signing_secret, BODY)
    t, mac = good.split(",")
    assert _post(client, signed, BODY, f"{t},v1={'0' * 64},{mac}").status_code == 202


def test_unsigned_calls_do_not_use_up_the_rate_limit(client: Any, cast: Any, published: Any) -> None:
    hook = triggers.create_webhook(actor=cast.editor, workflow=published, name="tight", mode="signed", rate_limit=1)
    assert hook.signing_secret is not None
    assert [_post(client, hook, BODY, None).status_code for _ in range(3)] == [401] * 3
    assert _post(client, hook, BODY, _header(hook.signing_secret, BODY)).status_code == 202


def test_a_secret_url_webhook_needs_no_signature(client: Any, cast: Any, published: Any) -> None:
    hook = triggers.create_webhook(actor=cast.editor, workflow=published, name="plain")
    assert hook.signing_secret is None and hook.webhook.mode == "url" and hook.webhook.signing_salt == ""
    assert _post(client, hook, BODY, None).status_code == 202


def test_a_rotated_server_key_still_verifies_through_the_fallbacks(client: Any, signed: triggers.NewWebhook,
                                                                   settings: Any) -> None:
    assert signed.signing_secret is not None
    old_key = settings.SECRET_KEY
    settings.SECRET_KEY = "a-new-key-" + "x1y2z3" * 10
    assert _post(client, signed, BODY, _header(signed.signing_secret, BODY)).status_code == 401
    settings.SECRET_KEY_FALLBACKS = [old_key]
    assert _post(client, signed, BODY, _header(signed.signing_secret, BODY)).status_code == 202


def test_an_unknown_mode_is_refused(cast: Any, published: Any) -> None:
    from designer.core.errors import BadRequest

    with pytest.raises(BadRequest, match="'url'.*'signed'"):
        triggers.create_webhook(actor=cast.editor, workflow=published, name="x", mode="jwt")
    assert Webhook.objects.count() == 0


@given(st.text(max_size=200))
def test_any_header_is_accepted_or_refused_with_a_signature_error(header: str) -> None:
    try:
        signature.verify(salt="ab" * 32, header=header, body=BODY, now=time.time())
    except signature.SignatureRefused as exc:
        assert exc.status == 401 and exc.message
    else:  # pragma: no cover - a random header cannot carry the HMAC
        raise AssertionError(f"{header!r} was accepted")


def test_sign_makes_what_verify_accepts() -> None:
    secret = signature.signing_secret("cd" * 32)
    header = signature.sign(secret, 1_800_000_000, BODY)
    assert header == _header(secret, BODY, 1_800_000_000)
    signature.verify(salt="cd" * 32, header=header, body=BODY, now=1_800_000_000)


# --- the workflow page and the API -------------------------------------------------------------


def test_the_owner_chooses_signed_mode_on_the_page_and_sees_the_secret_once(client: Any, cast: Any,
                                                                           published: Any) -> None:
    client.force_login(cast.owner)
    page = client.get(reverse("workflow-page", args=[published.pk])).content.decode()
    assert '<select id="webhook-mode" name="mode">' in page and 'value="signed"' in page
    response = client.post(reverse("webhook-create", args=[published.pk]), {"name": "erp", "mode": "signed"})
    assert response.status_code == 200
    signing_secret = response.context["new_webhook_signing_secret"]
    assert signing_secret.startswith("whsec_") and "data-webhook-signing-secret" in response.content.decode()
    url = response.context["new_webhook_url"]
    later = client.get(reverse("workflow-page", args=[published.pk])).content.decode()
    assert signing_secret not in later and 'data-webhook-mode="signed"' in later
    secret = url.rstrip("/").rsplit("/", 1)[-1]
    call = client.post(reverse("webhook-call", args=[secret]), data=BODY, content_type="application/json",
                       HTTP_TRELLIS_SIGNATURE=_header(signing_secret, BODY))
    assert call.status_code == 202, call.content
    plain = client.post(reverse("webhook-create", args=[published.pk]), {"name": "plain", "mode": "url"})
    assert plain.context["new_webhook_signing_secret"] is None
    assert "data-webhook-signing-secret" not in plain.content.decode()


def test_the_api_creates_a_signed_webhook(api: Any, client: Any, cast: Any, published: Any) -> None:
    hooks = reverse("api:workflow-webhooks", args=[published.pk])
    created = api(cast.editor).post(hooks, {"name": "crm", "mode": "signed"}, format="json")
    assert created.status_code == 201, created.json()
    payload = created.json()
    assert payload["mode"] == "signed" and payload["signing_secret"].startswith("whsec_")
    listed = api(cast.viewer).get(hooks).json()
    assert listed[0]["mode"] == "signed" and "signing_secret" not in listed[0]
    assert payload["signing_secret"] not in json.dumps(listed)
    secret = payload["url"].rstrip("/").rsplit("/", 1)[-1]
    call = client.post(reverse("webhook-call", args=[secret]), data=BODY, content_type="application/json",
                       HTTP_TRELLIS_SIGNATURE=_header(payload["signing_secret"], BODY))
    assert call.status_code == 202
    plain = api(cast.editor).post(hooks, {"name": "plain"}, format="json").json()
    assert plain["mode"] == "url" and plain["signing_secret"] is None
    bad = api(cast.editor).post(hooks, {"name": "x", "mode": "jwt"}, format="json")
    assert bad.status_code == 400


# --- the README's examples, run as written against a live server --------------------------------


def _readme_block(language: str, starts: str) -> str:
    from tests.designer.runs_support import REPO_ROOT

    readme = (REPO_ROOT / "README.md").read_text()
    fence = f"```{language}\n{starts}"
    assert fence in readme, f"the README lost its {language} signed-webhook example"
    return starts + readme.split(fence, 1)[1].split("```", 1)[0]


@pytest.mark.django_db(transaction=True)
def test_the_readme_examples_call_a_signed_webhook(live_server: Any, cast: Any, published: Any) -> None:
    import subprocess

    hook = triggers.create_webhook(actor=cast.editor, workflow=published, name="readme", mode="signed")
    url = live_server.url + reverse("webhook-call", args=[hook.secret])
    shell = subprocess.run(["bash", "-euc", _readme_block("sh", "BODY=")], capture_output=True, text=True,
                           timeout=60, env={"PATH": "/usr/bin:/bin", "SIGNING_SECRET": str(hook.signing_secret),
                                            "WEBHOOK_URL": url})
    assert shell.returncode == 0, shell.stderr
    assert json.loads(shell.stdout)["status"] == "queued"
    namespace: dict[str, Any] = {"SIGNING_SECRET": hook.signing_secret, "WEBHOOK_URL": url}
    exec(compile(_readme_block("python", "import hashlib"), "README.md", "exec"), namespace)  # noqa: S102
    assert Run.objects.count() == 2 and TriggerFire.objects.filter(webhook=hook.webhook).count() == 2

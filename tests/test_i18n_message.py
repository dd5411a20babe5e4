"""`Message`: a text built now and shown later, English as a str (what --json carries), the
current language when shown."""

from __future__ import annotations

import copy
import json
import pickle

from ffn_cli.attention import AttentionSpec
from ffn_cli.i18n import N_, Message, set_language, shown
from ffn_cli.models.layer import attention_summary


def test_a_message_is_english_as_a_str_and_translated_when_shown() -> None:
    detail = Message.join(Message(N_("{heads} heads × {dim}"), heads=32, dim=128), Message(N_(", {kv} KV heads"), kv=8), ", x")
    set_language("zh")
    assert detail == "32 heads × 128, 8 KV heads, x" and json.dumps(detail) == json.dumps("32 heads × 128, 8 KV heads, x")
    assert detail.shown() == "32 头 × 128，8 个 KV 头, x"
    assert shown("plain data") == "plain data"
    set_language("en")
    assert detail.shown() == str(detail)


def test_a_message_survives_a_copy_and_a_pickle() -> None:
    detail = attention_summary(AttentionSpec(4096, n_heads=32, n_kv_heads=8, qkv_bias=False, o_bias=False))
    set_language("zh")
    for again in (copy.deepcopy(detail), pickle.loads(pickle.dumps(detail))):
        assert again == detail and again.shown() == detail.shown() == "32 头 × 128，8 个 KV 头，无偏置"


def test_a_message_keeps_its_id_and_values_through_pickle() -> None:
    """A rank pickles its results to the launcher: the Message must still translate there."""
    import pickle

    from ffn_cli.i18n import N_, Message, set_language

    sent = Message.join("h[r]·W_down[:, r]ᵀ", Message(N_(" (partial sum)")))
    received = pickle.loads(pickle.dumps(sent))
    assert str(received) == str(sent) == "h[r]·W_down[:, r]ᵀ (partial sum)"
    set_language("zh")
    assert received.shown() == sent.shown() != str(sent)


def test_a_list_is_said_in_the_readers_language() -> None:
    from ffn_cli.i18n import Message, set_language

    items = Message.listed(["a", Message("norms"), "c"])
    assert str(items) == "a, norms, c"
    set_language("zh")
    try:
        assert items.shown() == "a、归一化、c"
    finally:
        set_language("en")
    assert Message.listed(["one"]) == "one"


def test_tidy_takes_out_only_the_spaces_between_chinese_characters() -> None:
    from ffn_cli.i18n import tidy

    assert tidy("注意力与 对图像 token 的交叉注意力 合计") == "注意力与对图像 token 的交叉注意力合计"
    assert tidy("注意力与 Gated DeltaNet 合计") == "注意力与 Gated DeltaNet 合计"
    assert tidy("attention and cross-attention together") == "attention and cross-attention together"


def test_layer_ranges_are_a_list_in_the_readers_language() -> None:
    from ffn_cli.i18n import set_language
    from ffn_cli.models.spec import layer_ranges

    ranges, strided = layer_ranges((0, 1, 2, 5, 7, 8)), layer_ranges((3, 8, 13, 18, 23, 28, 33, 38))
    assert (ranges, strided) == ("0–2, 5, 7–8", "3, 8, …, 38")  # the English, as --json carries it
    set_language("zh")
    try:
        assert (shown(ranges), shown(strided)) == ("0–2、5、7–8", "3、8、…、38")
    finally:
        set_language("en")

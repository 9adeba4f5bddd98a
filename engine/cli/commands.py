"""The commands besides ``colorize``: train, readout, bench and evaluate, each checking its arguments and running."""

from __future__ import annotations

import argparse

from .usage import UsageError


def train_command(args: argparse.Namespace) -> int:
    from ..training.train import TrainSettings, train

    s = TrainSettings(data=args.data, out=args.out, work=args.work, steps=args.steps, batch=args.batch,
                      size=args.size, lr=args.lr, seed=args.seed, max_minutes=args.max_minutes,
                      resume=args.resume, init=args.init, freeze_steps=args.freeze_steps,
                      val_every=args.val_every, threads=args.threads, reg_weight=args.reg_weight,
                      reg_beta=args.reg_beta, rebalance=args.rebalance, ema_decay=args.ema_decay,
                      tune_fraction=args.tune_fraction, colour_target=args.colour_target,
                      encoder_lr_scale=args.encoder_lr_scale,
                      decoder_lr_scale=args.decoder_lr_scale, crop_min=args.crop_min,
                      gamma_jitter=args.gamma_jitter, balance_groups=args.balance_groups,
                      degrade_share=args.degrade_share, degrade_strength=args.degrade_strength,
                      extra_data=args.extra, extra_share=args.extra_share, hint_channels=args.hint_channels,
                      encoder=args.encoder, hint_decoder=args.hint_decoder, hint_p_none=args.hint_p_none,
                      hint_geometric_p=args.hint_geometric_p,
                      first_trained_block=args.first_trained_block, autocast="bf16" if args.bf16 else args.autocast,
                      teacher=args.teacher, teacher_temperature=args.teacher_temperature,
                      keep_norm_stats=args.keep_norm_stats)
    if not args.data.is_dir():
        raise UsageError(f"{args.data} is not a folder")
    if args.hint_decoder and not args.hint_channels and args.init is None:
        raise UsageError("--hint-decoder needs a model that reads hints: add --hint-channels 3")
    if args.teacher is not None and not args.teacher.is_file():
        raise UsageError(f"--teacher {args.teacher}: no such weights file")
    if args.teacher_temperature <= 0:
        raise UsageError(f"--teacher-temperature {args.teacher_temperature}: must be above 0")
    if args.teacher is not None and args.init is None:
        raise UsageError("--teacher needs --init (usually the same weights): a student shares its teacher's ab bins")
    if args.decoder_lr_scale < 0 or args.encoder_lr_scale < 0:
        raise UsageError("--encoder-lr-scale and --decoder-lr-scale must be at least 0")
    if args.extra is not None and not args.extra.is_dir():
        raise UsageError(f"--extra {args.extra} is not a folder")
    if not 0.0 < args.extra_share < 1.0:
        raise UsageError(f"--extra-share {args.extra_share}: must be between 0 and 1")
    card = train(s)
    print(f"trained {card['steps']} steps in {card['minutes']} min -> {args.out}")
    return 0


def readout_command(args: argparse.Namespace) -> int:
    from ..training.readout import ReadoutSettings, choose_readout_elsewhere

    if not args.weights.is_file():
        raise UsageError(f"{args.weights}: no such weights file")
    if not args.photos.is_dir():
        raise UsageError(f"{args.photos} is not a folder")
    if args.hints_only and args.min_gain != 0.0:
        raise UsageError("--min-gain chooses the automatic read-out, which --hints-only keeps as it is")
    if args.hint_colour_target is not None and not 0.0 < args.hint_colour_target <= 2.0:
        raise UsageError(f"--hint-colour-target {args.hint_colour_target}: a share of the colour, above 0")
    card = choose_readout_elsewhere(ReadoutSettings(weights=args.weights, photos=args.photos, out=args.out,
                                                    min_gain_db=args.min_gain, size=args.size,
                                                    hint_colour_target=args.hint_colour_target,
                                                    hints_only=args.hints_only, spread_rule=args.spread_rule))
    r = card["readout"]
    if args.hints_only:
        h = r["hint_spread"]
        print(f"hint spread on {len(h.get('search', []))} settings: reach {h['reach']}, lightness "
              f"{h['lightness']}, floor {h['floor']}, colour {h['colour']}, fade {h.get('fade', 0.0)}, "
              f"restraint {h.get('restraint', 0.0)} "
              f"({h['gain_over_no_spread_db']:+.2f} dB over "
              f"no spread at {h['hints']} hints) -> {args.out}")
        return 0
    print(f"read-out on {r['photos']} photos: temperature {r['temperature']}, doubt pull {r['doubt_pull']}, "
          f"chroma gain {r['chroma_gain']} ({r['gain_db']:+.2f} dB over grey, colourfulness "
          f"{r['colourfulness_ratio']:.2f}{'' if r['met'] else '; no read-out reaches --min-gain'}) -> {args.out}")
    return 0


def bench_command(args: argparse.Namespace) -> int:
    from ..bench import BenchSettings, run_bench

    return run_bench(BenchSettings(size=args.size, batches=tuple(args.batch), json_path=args.json,
                                   profile=args.profile, repeat=args.repeat, device=args.device,
                                   weights=args.weights, threads=args.threads, hints=args.hints,
                                   encoders=tuple(args.encoders or ()), peers=args.peers, rounds=args.rounds,
                                   cuda_graphs=not args.no_cuda_graphs))


def evaluate_command(args: argparse.Namespace) -> int:
    from ..training.evaluate import EvalSettings, run_evaluate

    if not args.folder.is_dir():
        raise UsageError(f"{args.folder} is not a folder")
    if args.against is not None and not args.against.is_file():
        raise UsageError(f"{args.against}: no such weights file")
    return run_evaluate(EvalSettings(folder=args.folder, split=args.split, size=args.size,
                                     weights=args.weights, json_path=args.json, markdown_path=args.markdown,
                                     examples_dir=args.examples, examples=args.n_examples,
                                     example_names=tuple(args.example_names or ()),
                                     chroma_gain=args.chroma_gain, doubt_pull=args.doubt_pull,
                                     against=args.against,
                                     hints=tuple(args.hints or ()), degrade=args.degrade,
                                     degrade_seed=args.degrade_seed))

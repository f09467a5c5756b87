"""glue.py's GLUE download against the local http_server fixture (zips the test builds; no
internet)."""
import zipfile

import pytest
from test_finetune_model import save_train_checkpoint, tiny_config, tiny_tokenizer

import finetune as ft
from support import glue
from support.plumbing import DownloadError


def make_zip(path, files):
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)


def test_zip_task_downloads_once_into_the_cache(http_server, tmp_path):
    served, url = http_server
    # QNLI is published as QNLIv2.zip holding a QNLI/ folder (and GLUE's zips carry extra files)
    make_zip(served / "QNLIv2.zip", {
        "QNLI/train.tsv": "index\tquestion\tsentence\tlabel\n0\tWho?\tHe did.\tentailment\n",
        "QNLI/dev.tsv": "index\tquestion\tsentence\tlabel\n0\tWhen?\tRed.\tnot_entailment\n",
        "QNLI/test.tsv": "index\tquestion\tsentence\n0\tWhy?\tBecause.\n"})
    task, cache = glue.get_task("qnli"), tmp_path / "cache"
    folder = glue.download_task(task, cache, base_url=url)
    assert [e.label for e in glue.read_split(task, folder, "dev")] == [1]
    (served / "QNLIv2.zip").unlink()  # a second call must not need the server
    assert glue.download_task(task, cache, base_url=url) == folder


def test_zip_without_the_task_folder_is_rejected(http_server, tmp_path):
    served, url = http_server
    make_zip(served / "RTE.zip", {"readme.txt": "not GLUE"})
    with pytest.raises(FileNotFoundError,
                       match="has no RTE/train.tsv: it is not GLUE's RTE archive"):
        glue.download_task(glue.get_task("rte"), tmp_path / "cache", base_url=url)


def test_mrpc_is_built_from_the_microsoft_files(http_server, tmp_path):
    served, url = http_server
    header = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    (served / "msr_paraphrase_train.txt").write_text(
        header + '1\t11\t12\tA "quoted" one.\tA quoted one.\n'
                 '0\t21\t22\tDev pair.\tNot it.\n1\t31\t32\tThird.\tThree.\n',
        encoding="utf-8")
    (served / "msr_paraphrase_test.txt").write_text(header + "1\t41\t42\tTest a.\tTest b.\n",
                                                    encoding="utf-8")
    (served / "mrpc_dev_ids.tsv").write_text("21\t22\n")
    task = glue.get_task("mrpc")
    folder = glue.download_task(task, tmp_path / "cache", base_url=url, mrpc_base_url=url)
    # train = the rows not in mrpc_dev_ids.tsv, dev = those in it; both keep the BOM'd header
    assert [(e.text_a, e.label) for e in glue.read_split(task, folder, "train")] == [
        ('A "quoted" one.', 1), ("Third.", 1)]
    assert [(e.text_a, e.label) for e in glue.read_split(task, folder, "dev")] == [("Dev pair.", 0)]
    assert (folder / "dev.tsv").read_bytes().startswith(b"\xef\xbb\xbfQuality")
    # test = the test rows numbered from 0, label dropped, as GLUE's test.tsv
    assert (folder / "test.tsv").read_text() == ("index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                                                 "0\t41\t42\tTest a.\tTest b.\n")


def test_missing_file_on_the_server_is_a_clear_error(http_server, tmp_path):
    _, url = http_server
    with pytest.raises(DownloadError, match=r"could not download .*CoLA.* HTTP error 404"):
        glue.download_task(glue.get_task("cola"), tmp_path / "cache", base_url=url)
    # nothing half-written is left to be trusted
    assert not any((tmp_path / "cache").glob("*.zip"))


def test_cli_downloads_when_no_data_dir(http_server, tmp_path):
    served, url = http_server
    make_zip(served / "WNLI.zip", {
        "WNLI/train.tsv": "index\tsentence1\tsentence2\tlabel\n0\tThe cat sat.\tIt sat.\t1\n",
        "WNLI/dev.tsv": "index\tsentence1\tsentence2\tlabel\n0\tA dog ran.\tIt ran.\t0\n"})
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    args = ["--init", str(tmp_path / "run"), "--glue_url", url,
            "--cache_dir", str(tmp_path / "cache"), "--out_dir", str(tmp_path / "out"),
            "--epochs", "1"]
    report = ft.main(["--task", "wnli"] + args)
    assert report["tasks"]["wnli"]["median"].keys() == {"acc"}
    assert (tmp_path / "cache" / "WNLI" / "WNLI" / "dev.tsv").is_file()
    with pytest.raises(SystemExit, match="error: could not download .*RTE.* HTTP error 404"):
        ft.main(["--task", "rte"] + args)

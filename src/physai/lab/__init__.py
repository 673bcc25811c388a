"""Labs: a lesson's interactive MuJoCo page, run in the browser from its ```lab simlab {...}``` block.

A lab is a JSON object (the lesson's block): a model, a camera, a trail, a `setup` script, buttons and selects
whose scripts are JavaScript against MuJoCo's `model` and `data`, readouts and plots.

    lab = load_lab("arm2")        # a bundled lab's name, a lab .json file, or a lesson file with a lab block

Modules: spec (SCHEMA, the lab JSON's fields; the validator and the loaders re-exported here), npm (the page's npm
packages, installed into physai's cache folder), server (serves a Lab on 127.0.0.1); the page is web/, the bundled
labs are labs/. Bad input raises physai.exceptions.LabError or UnknownLabError (the CLI's exit status 2).
"""

from physai.lab.spec import LABS_DIR, SCHEMA, Lab, bundled_labs, lab_from_json, lab_from_lesson_text, load_lab, validate

__all__ = ["LABS_DIR", "SCHEMA", "Lab", "bundled_labs", "lab_from_json", "lab_from_lesson_text", "load_lab", "validate"]

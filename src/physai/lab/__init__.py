"""Labs: a lesson's interactive MuJoCo page, run in the browser from its ```lab simlab {...}``` block.

A lab is a JSON object (the lesson's block): a model, a camera, a trail, a `setup` script, buttons and selects
whose scripts are JavaScript against MuJoCo's `model` and `data`, readouts and plots. Its fields are declared in
physai.lab.spec.SCHEMA, which `validate` walks.

    load_lab("arm2")                      # a bundled lab, src/physai/lab/labs/arm2.json
    load_lab("my_lab.json")               # a lab file
    load_lab("lesson.md")                 # the first lab block of a lesson file (curly quotes normalised)
    lab_from_lesson_text(text)            # the same, on text

Modules: spec (the schema and the loaders), npm (the page's npm packages, installed into physai's cache folder),
server (serves a Lab on 127.0.0.1); the page's files are in web/, the bundled labs in labs/.
Bad input raises physai.exceptions.LabError or UnknownLabError (the CLI's exit status 2).
"""

from physai.lab.spec import LABS_DIR, SCHEMA, Lab, bundled_labs, lab_from_json, lab_from_lesson_text, load_lab, validate

__all__ = ["LABS_DIR", "SCHEMA", "Lab", "bundled_labs", "lab_from_json", "lab_from_lesson_text", "load_lab", "validate"]

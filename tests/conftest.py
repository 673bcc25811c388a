"""Shared test setup: Menagerie robots come from ../shared/menagerie unless MENAGERIE_ROOT is set; the hypothesis
profiles; the `robot`, `restore_isa` and `compiled_backend` fixtures; the suite's slices (markers by file, fixture and
name; a test whose Chromium or compiled extension is missing skips, or fails on CI). Plain helpers (the model table, Robot,
assert_close, run on a backend, assert_same_text) are in tests/helpers.py."""

import os
from pathlib import Path

_MIRROR = Path(__file__).resolve().parents[1].parent / "shared" / "menagerie"
if "MENAGERIE_ROOT" not in os.environ and _MIRROR.is_dir():
    os.environ["MENAGERIE_ROOT"] = str(_MIRROR)

# hypothesis: the CI profile draws the same 100 examples on every run (derandomize, no example database);
# HYPOTHESIS_PROFILE=explore draws 1000 fresh ones each run.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, max_examples=100, deadline=None, database=None, print_blob=True)
settings.register_profile("explore", max_examples=1000, deadline=None, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# the `robot` fixture: one helpers.Robot per key of the test module's ROBOTS (module scope), made with the module's
# ROBOT_STATES (n, seed, qd_max); test ids are the keys.
import pytest  # noqa: E402

from helpers import Robot  # noqa: E402
from physai import engine  # noqa: E402
from physai.engine import native  # noqa: E402


def pytest_generate_tests(metafunc):
    if "robot" in metafunc.fixturenames and hasattr(metafunc.module, "ROBOTS"):
        metafunc.parametrize("robot", list(metafunc.module.ROBOTS), indirect=True, scope="module")


@pytest.fixture(scope="module")
def robot(request):
    return Robot(request.param, **getattr(request.module, "ROBOT_STATES", {}))


@pytest.fixture
def restore_isa():
    """The batch kernel's variant (physai.engine.native.set_isa) as it was before the test."""
    before = native.isa()
    yield
    assert native.set_isa(before)


@pytest.fixture
def compiled_backend():
    """The compiled backend active during the test (whatever PHYSAI_BACKEND chose), the previous one restored after."""
    previous = engine.set_backend("native")
    yield
    engine.set_backend(previous)


# ---- the suite's slices: markers (registered in pyproject.toml) given by file, fixture and name, so that test bodies
# need no decorator; `uv run pytest -m "not slow and not browser"` is the developers' fast slice ----
import lab.browser  # noqa: E402

from physai.exceptions import InvalidArgumentError, PhysaiError  # noqa: E402

pytest_plugins = ["pytester"]                     # tests/test_slices.py runs the guard below on a file of its own

#: files all of whose tests carry a marker
FILE_MARKERS = {
    "install": {"test_install.py"},                                           # builds a wheel and a virtual environment
    "slow": {"test_install.py", "test_lesson11_experiments.py",             # ... and runs lesson 11's scripts in fixtures
             "test_task_models.py"},                                          # 36 runs of 100 steps beside mj_step
    "cluster": {"test_dask_example.py"},                                      # starts a Dask distributed cluster
    "compiled": {"test_backend.py", "test_constraints_native.py", "test_native_vs_numpy.py", "test_threads.py"},
}
#: tests that run the compiled backend by name in their body (parametrized ones are found by their backend="native")
COMPILED = {
    "test_architecture.py": {"test_each_cpp_header_compiles_on_its_own"},      # a C++ compiler checks the headers
    "test_observed.py": {"test_the_compiled_step_observes_what_the_numpy_engine_does",
                         "test_the_other_gymnasium_task_models_observe_as_mujoco_in_the_compiled_step",
                         "test_step_frames_is_mj_step_of_nstep_frames_in_one_compiled_call",
                         "test_a_dropped_model_is_collected_after_an_observed_compiled_step",
                         "test_step_frames_forward_only_states_are_mj_forwards_in_the_same_call"},
    "test_model_constant.py": {"test_a_prepared_compiled_copy_does_not_skip_the_collision_check"},
    "test_constraints.py": {"test_compiled_discrete_forward_is_the_numpy_texts_and_mujocos",
                            "test_compiled_discrete_rows_read_later_are_the_calls"},
    "test_actuation.py": {"test_compiled_rollout_equals_the_numpy_engine", "test_compiled_transmissions_equal_the_numpy_engine",
                          "test_the_kept_simulation_workspace_follows_the_actuators"},
    "test_collision.py": {"test_the_compiled_model_refuses_mesh_indices_outside_its_arrays",
                          "test_detect_refuses_an_along_of_another_shape_or_kind",
                          "test_detect_of_a_pair_subset_is_the_whole_detect_restricted_to_it",
                          "test_detect_along_a_dof_is_the_whole_detect_at_that_point"},
    "test_contact_simulation.py": {"test_a_diverging_contact_run_names_its_deepest_contact", "test_numpy_backend_gives_the_same_run"},
    "test_convex.py": {"test_compiled_hfield_contacts_equal_the_numpy_text",
                       "test_compiled_side_by_side_cylinder_contacts_equal_the_numpy_text",
                       "test_constraint_rows_of_a_terrain_equal_on_both_backends",
                       "test_the_compiled_model_refuses_heightfield_indices_outside_its_arrays"},
    "test_derivatives.py": {"test_bad_input_is_named", "test_compiled_contact_rows_equal_the_numpy_text",
                            "test_an_unconverged_solve_is_named_by_a_warning",
                            "test_compiled_constrained_step_equals_the_numpy_text",
                            "test_compiled_constrained_step_without_rows_and_in_batches",
                            "test_constrained_step_derivatives_difference_only_the_dofs_that_move_a_row",
                            "test_constrained_step_derivatives_detect_at_each_point_the_pairs_its_dof_moves",
                            "test_constrained_rows_analytic_q_derivatives_match_central_differences",
                            "test_overflowing_velocities_are_named", "test_a_solve_stopped_by_its_line_search_is_named_so",
                            "test_step_derivatives_batch_and_backends_agree", "test_step_derivatives_of_random_muscle_models",
                            "test_step_derivatives_of_every_transmission", "test_step_derivatives_with_spatial_tendons",
                            "test_a_connect_on_a_light_capsule_gives_one_a_on_both_backends",
                            "test_constrained_one_plain_state_equals_the_full_path",
                            "test_compiled_proof_proves_the_numpy_texts_dofs"},
    "test_passive.py": {"test_step_derivatives_in_a_fluid"},
    "test_frames.py": {"test_a_point_jacobian_computes_its_path_and_names_any_zero_quaternion",
                       "test_frame_motion_is_the_same_on_both_backends", "test_frame_motion_of_one_state_and_bad_input"},
    "test_integrators.py": {"test_the_compiled_discrete_step_takes_the_tendon_servo_and_fluid_terms",
                            "test_the_compiled_discrete_step_solves_rows_in_the_coupled_metric",
                            "test_the_discrete_metric_is_factored_on_the_trees_pattern_when_its_terms_fit_it",
                            "test_the_discrete_metric_on_the_trees_pattern_solves_contacts_across_trees",
                            "test_the_compiled_discrete_smooth_solve_at_its_iteration_cap_warns",
                            "test_the_compiled_cap_warning_survives_a_failing_state",
                            "test_discrete_forward_dynamics_at_the_smooth_solves_cap_warns_on_both_backends"},
    "test_kinematics.py": {"test_body_poses_equal_mujocos"},
    "test_hostile_input.py": {"test_the_compiled_model_refuses_a_contact_dimension_outside_1_3_4_6"},
    "test_solvers.py": {"test_humanoid_with_cg_follows_mj_step_compiled"},
    "test_rollout.py": {
        "test_a_divergence_before_a_lower_index_failure_is_named", "test_a_diverging_trajectory_is_named",
        "test_a_failure_before_a_lower_index_divergence_is_named", "test_a_singular_mass_matrix_is_named_alike_on_both_backends",
        "test_a_zero_quaternion_is_refused_by_name", "test_the_first_divergence_in_time_is_named",
    },
    "test_tendons.py": {"test_compiled_lengths_and_jacobians_equal_numpys", "test_dm_control_tendon_models_run_compiled_as_mj_step"},
    "test_tendon_actfrc.py": {"test_compiled_step_derivatives_equal_the_numpy_text", "test_bad_tendon_limits_are_named"},
}
#: fixtures whose users carry a marker: the headless Chromium page, the compiled kernel's instruction sets, its backend
FIXTURE_MARKERS = {"browser": "browser", "restore_isa": "compiled", "compiled_backend": "compiled"}
#: slow tests, by file and name (all their parameters): over 0.5 s together in a full run (pytest --durations=0) on a
#: 2-core machine loaded by other jobs (3-5 times slower than alone); a new test is fast until listed here
SLOW = {
    "test_envs.py": {"test_synced_matches_gymnasium_1000", "test_free_running_matches_gymnasium"},
    "test_passive.py": {"test_fish_with_its_tendon_springs_follows_mj_step", "test_swimmer_follows_mj_step",
                        "test_step_derivatives_in_a_fluid", "test_implicitfast_solves_a_free_body_in_a_fluid_with_its_damping"},
    "test_tendons.py": {
        "test_dm_control_tendon_models_run_compiled_as_mj_step",
        "test_lengths_jacobians_and_velocities_equal_mujocos", "test_a_fixed_tendon_equality_runs_compiled_as_mujoco",
        "test_rollout_runs_each_state_as_simulate_and_energy_is_mujocos", "test_simulate_follows_mj_step",
        "test_fixed_tendon_springs_and_dampers_run_compiled_as_mj_step",
    },
    "test_11_rigid_body_dynamics.py": {
        "test_bias_and_gravity_match_qfrc_bias", "test_forward_dynamics_matches_mj_forward",
        "test_pendulum_bias_and_gravity_match_qfrc_bias", "test_pendulum_energy_matches_mujoco",
        "test_pendulum_forward_dynamics_matches_mj_forward", "test_pendulum_rnea_matches_mj_inverse_and_hand_formula",
        "test_rnea_matches_mj_inverse", "test_semi_implicit_euler_reproduces_mj_step_for_10_s",
    },
    "test_acceptance.py": {
        "test_all_checks_pass", "test_fake_coriolis_matrices_fail", "test_wrong_armature_fails_the_balance",
    },
    "test_architecture.py": {
        "test_no_public_class_shadows_a_module", "test_one_module_outside_the_engine_reads_the_collision_driver",
        "test_imports_point_down", "test_no_import_inside_a_function", "test_no_private_name_of_another_module",
        "test_the_lesson_and_the_engine_stand_alone", "test_each_cpp_header_compiles_on_its_own",
    },
    "test_backend.py": {
        "test_map_states_over_dask_arrays", "test_physai_backend_numpy_selects_the_reference_at_import",
        "test_physai_isa_chooses_the_variant_at_import", "test_threads_do_not_change_results",
    },
    "test_check11.py": {
        "test_a_missing_step_and_a_missing_import_are_named", "test_armature_left_out_of_the_mass_matrix",
        "test_gravity_with_the_wrong_sign", "test_physai_dynamics_passes_every_step",
        "test_rnea_that_matches_qfrc_inverse_instead",
    },
    "test_cli_check.py": {"test_humanoids_pass", "test_passes"},
    "test_cli_verify.py": {
        "test_the_constraints_table_times_warm_calls_not_one_time_work", "test_a_wrong_constraint_force_fails_with_exit_1",
        "test_without_a_model_it_verifies_the_panda_at_home",
        "test_humanoids_pass", "test_panda_home_matches_mujoco",
        "test_states_are_checks_random_states_within_verifys_ranges", "test_the_constraints_table_on_the_g1",
    },
    "test_collision.py": {
        "test_refusal_names_the_advice_that_works_everywhere", "test_detect_along_a_dof_is_the_whole_detect_at_that_point",
        "test_near_parallel_capsules_match_mj_collision",
        "test_unsupported_pairs_warn_once_per_pair_and_model",
        "test_compiled_detect_matches_numpy_and_mj_collision",
        "test_box_box_matches_mujoco_face_and_edge_contacts", "test_broad_phase_tests_near_pairs_only",
        "test_compiled_convex_mesh_contacts_step_as_mj_step", "test_convex_mesh_contacts_step_as_mj_step",
        "test_convex_meshes_at_random_poses_match_mj_collision", "test_convex_meshes_on_a_plane_match_mj_collision",
        "test_menagerie_scenes_match_mj_collision", "test_random_scenes_match_mj_collision",
        "test_urdf_collision_geoms_match_mujocos_urdf_import",
    },
    "test_constraints.py": {
        "test_solver_limits_stop_where_mj_forward_stops",
        "test_contacts_of_another_model_are_refused", "test_discrete_inverse_equals_invdiscrete",
        "test_forward_at_defaults_is_as_close_as_mujocos", "test_forward_equals_mujocos_at_tight_tolerance",
        "test_g1_along_its_steps", "test_inverse_equals_mj_inverse", "test_invweight0_equals_mujocos",
        "test_robot_forward_and_inverse", "test_robot_rows_equal_mujocos", "test_rows_equal_mujocos",
        "test_compiled_discrete_forward_is_the_numpy_texts_and_mujocos",
    },
    "test_constraints_native.py": {
        "test_a_batch_equals_the_numpy_reference", "test_forward_equals_the_numpy_reference",
        "test_g1_standing_equals_the_numpy_reference_and_mujoco", "test_rows_and_inverse_equal_the_numpy_reference",
        "test_forward_with_its_rows_holds_update_at_its_solution",
    },
    "test_contact_simulation.py": {
        "test_solver_limits_follow_mj_step",
        "test_implicit_steps_with_saturated_joint_actuators_match_mj_step",
        "test_rollout_with_saturated_joint_actuators_matches_mujoco_rollout",
        "test_a_closed_loop_of_steps_follows_mj_step", "test_a_stack_of_boxes_follows_mj_step",
        "test_constraint_functions_find_their_own_contacts",
        "test_models_with_pairs_physai_cannot_collide_are_refused", "test_numpy_backend_gives_the_same_run",
        "test_one_step_on_random_scenes_matches_mj_step", "test_one_step_on_the_falling_h1_matches_mj_step",
        "test_trajectory_matches_mj_step", "test_a_pile_of_spheres_follows_mj_step",
        "test_constrained_rollout_with_free_bodies_runs_each_trajectory_as_simulate",
    },
    "test_convex.py": {
        "test_capsule_pairs_match_mj_collision", "test_capsule_pairs_with_margins_match_mj_collision",
        "test_capsule_pairs_with_margins_come_in_mujocos_order",
        "test_cylinder_polygon_pairs_match_mj_collision",
        "test_pairs_match_mj_collision", "test_polygon_pairs_match_mj_collision",
        "test_multi_pairs_without_multiccd_match_mj_collision", "test_trajectory_matches_mj_step",
        "test_compiled_hfield_contacts_equal_the_numpy_text",
        "test_hfield_terrains_match_mj_collision", "test_quadruped_on_a_heightfield_matches_mj_collision",
        "test_hfield_terrain_steps_as_mj_step",
        "test_multi_pairs_trajectory_without_multiccd_matches_mj_step", "test_polygon_pairs_trajectory_matches_mj_step",
        "test_capsule_pairs_trajectory_matches_mj_step", "test_every_pair_at_a_zero_ccd_tolerance_matches_mj_collision",
    },
    "test_coriolis.py": {
        "test_c_qd_is_bias_minus_gravity", "test_mdot_minus_2c_is_skew_and_passive",
        "test_panda_coriolis_matches_pinocchio_mjcf_parser", "test_velocity_derivative_of_bias_is_2c",
    },
    "test_dask_example.py": {"test_dask_rnea_example_writes_what_the_direct_call_gives"},
    "test_derivatives.py": {
        "test_step_derivatives_with_saturated_joint_actuators", "test_step_derivatives_of_every_transmission",
        "test_step_derivatives_of_random_muscle_models",
        "test_rnea_derivatives_against_central_differences", "test_step_derivatives_batch_and_backends_agree",
        "test_constrained_discrete_step_derivatives_of_random_constraint_scenes",
        "test_constrained_discrete_step_derivatives_of_the_discrete_integrators_scenes",
        "test_constrained_step_derivatives_refuse_a_multi_contact_where_its_clipped_points_jump",
    },
    "test_docs.py": {"test_guide_example_runs"},
    "test_engine.py": {
        "test_a_zero_quaternion_in_integrate_is_named", "test_data_against_mujocos_stages",
        "test_far_from_the_origin_keeps_its_digits", "test_free_joint_is_three_slides_and_a_ball",
        "test_not_finite_or_not_numbers", "test_sizes", "test_teaching_layer_agrees", "test_wrong_length",
    },
    "test_examples.py": {
        "test_ars_raises_the_hopper_return_reproducibly",
        "test_contact_example_follows_mj_step", "test_ik_reaches_the_h1_targets_within_its_ranges",
        "test_lqr_from_step_derivatives_balances_the_arm_upright", "test_panda_grasp_lifts_the_box_as_mj_step",
        "test_g1_squat_follows_mj_step",
        "test_operational_space_control_keeps_the_panda_hand_on_its_circle",
    },
    "test_extras.py": {
        "test_a_missing_extra_is_named", "test_every_physai_module_imports_without_the_extras",
        "test_the_core_imports_no_extra",
    },
    "test_forces.py": {
        "test_actuator_force_matches_qfrc_actuator_with_clamping",
        "test_actuator_velocity_derivative_is_the_derivative", "test_applied_force_matches_mj_applyFT_and_qfrc_smooth",
        "test_constraint_force_matches_qfrc_constraint", "test_full_balance_on_the_panda",
        "test_passive_force_matches_qfrc_passive",
    },
    "test_frames.py": {
        "test_a_point_jacobian_computes_its_path_and_names_any_zero_quaternion",
        "test_frame_jacobians_equal_pinocchio_in_its_three_references",
        "test_frame_motion_is_the_same_on_both_backends", "test_frame_poses_equal_mujoco_sites_and_bodies",
    },
    "test_hostile_input.py": {
        "test_gjk_and_epa_end_on_poses_that_are_not_finite",
        "test_body_jacobians_keep_their_digits_far_from_the_origin", "test_forward_dynamics_names_a_bad_warm_start",
        "test_forward_dynamics_takes_a_warm_start_of_any_layout", "test_task_space_names_bad_tasks",
    },
    "test_identification.py": {
        "test_base_parameters", "test_h1_against_pinocchio_through_the_conventions",
        "test_identification_experiment_core", "test_known_base_parameter_counts", "test_panda_against_pinocchio",
        "test_regressor_times_parameters_is_rnea",
    },
    "test_integrators.py": {
        "test_discrete_integrator_follows_mj_step", "test_discrete_rollout_of_many_states_follows_mj_step",
        "test_discrete_integrator_with_tendons_and_servos_follows_mj_step",
        "test_discrete_integrator_with_fluid_forces_follows_mj_step",
        "test_discrete_integrator_with_constraints_follows_mj_step", "test_discrete_constraint_rows_and_forces_equal_mujocos",
        "test_discrete_integrator_with_constraints_under_cg_pgs_and_without_islands",
        "test_simulation_follows_the_models_options_as_mj_step",
        "test_damped_pendulum_reproduces_mj_step", "test_free_and_ball_joints_follow_mj_step_for_1_s",
        "test_implicitfast_solves_standalone_free_bodies_with_their_gyroscopic_term",
        "test_panda_2_s_with_home_ctrl_reproduces_mj_step", "test_pendulum_10_s_reproduces_mj_step",
        "test_the_compiled_discrete_step_takes_the_tendon_servo_and_fluid_terms",
        "test_the_compiled_discrete_step_solves_rows_in_the_coupled_metric",
        "test_cg_steps_follow_mj_step_off_the_knife_edge_and_each_step_on_it",
    },
    "test_inverse.py": {
        "test_analytic_accelerations_do_not_replay", "test_discrete_inverse_equals_mj_inverse_with_invdiscrete",
        "test_discrete_inverse_on_the_panda_with_servos_and_a_finger_tendon",
        "test_rk4_shooting_replays_onto_the_samples", "test_rk4_shooting_with_finite_difference_jacobian_agrees",
    },
    "test_jacobians.py": {
        "test_body_jacobian_matches_mj_jacBody_and_mj_jacBodyCom", "test_point_jacobian_matches_mj_jac_at_any_point",
    },
    "test_kinematics.py": {"test_body_poses_equal_mujocos"},
    "test_lab.py": {"test_first_run_installs_the_npm_packages_into_the_cache_folder", "test_node_lib"},
    "test_lab_server.py": {
        "test_a_slow_sender_is_cut_off_at_the_request_deadline",
        "test_idle_connections_do_not_block_a_request_and_are_closed", "test_only_loopback_host_headers_are_answered",
    },
    "test_lesson_reader.py": {
        "test_the_cli_refuses_a_device_or_a_fifo_in_one_line",
        "test_no_lesson_text_makes_reading_fail"
    },
    "test_listings.py": {
        "test_cross_check_published_numbers_of_the_lessons_models",
        "test_cross_check_printed_lines_are_the_published_ones", "test_l6_2_manipulator_equation_properties",
        "test_l7_1_armature_and_damping_against_mujoco", "test_l7_1_balance_energy_and_spectrum_against_mujoco",
        "test_l7_1_two_link_arm_against_mujoco", "test_l7_2_box_holding_forces_against_mj_inverse",
        "test_l7_2_inverse_undoes_forward", "test_l7_2_torques_replay_exactly_only_when_consistent",
    },
    "test_mjcourse.py": {"test_the_lesson_listings_run_where_the_lessons_say"},
    "test_model_cache.py": {
        "test_a_cached_load_is_the_same_model", "test_another_robots_file_under_this_name_is_recompiled",
        "test_flipped_bytes_are_recompiled",
    },
    "test_native_vs_numpy.py": {
        "test_native_equals_numpy", "test_rollout_is_simulate_from_each_start",
        "test_rollout_with_every_input_equals_numpy",
    },
    "test_pinocchio.py": {"test_converted_model_matches_the_tree", "test_mjcf_parser_agrees"},
    "test_random_trees.py": {
        "test_every_integrator_follows_mj_step_on_trees_with_free_joints", "test_every_joint_type_matches_mujoco",
        "test_random_tree_matches_mujoco",
    },
    "test_rollout.py": {
        "test_a_diverging_trajectory_is_named", "test_rollout_equals_mujoco_rollout",
        "test_the_first_divergence_in_time_is_named",
    },
    "test_seed_experiments.py": {
        "test_challenge_passivity", "test_challenge_rk4_vs_euler", "test_contact_inverse",
        "test_point_mass_arm_checks",
    },
    "test_solvers.py": {
        "test_island_statistics_are_the_largest_islands", "test_noslip_forward_equals_mj_forward",
        "test_newton_and_cg_stop_by_the_trace_of_the_current_mass_matrix",
        "test_folded_chain_at_a_loose_tolerance_follows_mj_step", "test_pgs_g1_along_its_steps",
        "test_humanoid_with_pgs_follows_mj_step", "test_folded_chain_with_noslip_follows_mj_step",
        "test_islands_solved_apart_follow_mj_step",
    },
    "test_spatial.py": {"test_log_jacobians_equal_finite_differences_and_pinocchio"},
    "test_task_space.py": {"test_inertia_pseudo_inverse_and_bias_equal_mujoco_formulas"},
    "test_threads.py": {
        "test_ctrl_c_stops_a_large_constrained_rollout_during_its_setup",
        "test_a_forked_child_runs_batches_on_a_pool_of_its_own",
        "test_a_signal_handler_may_run_batches_during_a_batch", "test_ctrl_c_stops_a_long_compiled_run",
    },
    "test_urdf.py": {
        "test_a_long_chain_needs_no_recursion", "test_building_a_chain_is_linear_in_its_links",
        "test_example_robot_data_arms_match_pinocchio",
    },
    "test_view.py": {"test_simplified_meshes_stay_within_their_cubes_and_keep_their_normals"},
    "test_actuation.py": {
        "test_simulate_with_every_transmission_follows_mj_step", "test_compiled_transmissions_follow_mj_step",
        "test_compiled_transmissions_equal_the_numpy_engine",
        "test_simulate_carries_the_activations_as_mj_step", "test_compiled_rollout_equals_the_numpy_engine",
    },
    "test_model_constant.py": {"test_no_public_call_writes_into_a_model"},
    "test_conventions.py": {"test_the_maps_invert_each_other"},
}


def _markers_of(item) -> set[str]:
    """The slices a collected test belongs to, from its file, its fixtures, its name and its backend parameter."""
    file, name = item.path.name, getattr(item, "originalname", item.name)
    found = {marker for marker, files in FILE_MARKERS.items() if file in files}
    found |= {marker for fixture, marker in FIXTURE_MARKERS.items() if fixture in getattr(item, "fixturenames", ())}
    found |= {marker for marker, names in (("slow", SLOW), ("compiled", COMPILED)) if name in names.get(file, ())}
    if getattr(item, "callspec", None) is not None and item.callspec.params.get("backend") == "native":
        found.add("compiled")
    return found


@pytest.hookimpl(tryfirst=True)                    # before -m selects by marker
def pytest_collection_modifyitems(items):
    for item in items:
        for marker in sorted(_markers_of(item)):
            item.add_marker(marker)


def _no_chromium() -> str | None:
    try:
        lab.browser.chromium_executable()
    except PhysaiError as exc:
        return str(exc)
    return None


def _no_extension() -> str | None:
    return None if native.available() else ("the compiled extension physai.engine._native is not built (no C++ compiler "
                                            "when physai was installed: uv sync --reinstall-package physai with one)")


#: marker -> why a test with it cannot run on this machine (None: it can)
REQUIREMENTS = {"browser": _no_chromium, "compiled": _no_extension}


def in_ci() -> bool:
    """On CI (CI=true, as CI runners set it): every test must run, so a missing requirement fails instead of skipping."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test that asks for the compiled backend in its body (engine.set_backend("native"), helpers.run) without the
    compiled marker: where the extension is not built it skips as a marked one does (fails on CI, re-raised)."""
    try:
        return (yield)
    except InvalidArgumentError as exc:
        reason = _no_extension()
        if reason is None or in_ci() or not str(exc).startswith("the compiled backend is not built"):
            raise
        pytest.skip(f"compiled (asked for in the test's body): {reason}")


@pytest.hookimpl(tryfirst=True)                    # before the test's fixtures are set up
def pytest_runtest_setup(item):
    for marker, missing in REQUIREMENTS.items():
        reason = missing() if item.get_closest_marker(marker) else None
        if reason and in_ci():
            pytest.fail(f"CI runs every test, and this one ({marker}) cannot run here: {reason}", pytrace=False)
        if reason:
            pytest.skip(f"{marker}: {reason}")

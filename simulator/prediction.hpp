// A simulation as the one Prediction type that predict reports, so that `epochcast simulate`
// prints the same table and JSON (docs/model.md, "Simulation", says which fields come from where).
#pragma once

#include "model/cost_model.hpp"
#include "simulator/simulation.hpp"

namespace epochcast::sim {

/// The iteration breakdown comes from the simulation (means over GPUs and iterations); throughput,
/// efficiency, epoch, time to train and cost follow from the simulated iteration with the same
/// equations as predict ("Iteration, throughput, efficiency" and "Time to train and cost");
/// the one-GPU and one-node baselines and the relative uncertainty band are predict's.
Prediction simulated_prediction(const CostModel& model, const Scenario& scenario, const SimulationResult& result);

}  // namespace epochcast::sim

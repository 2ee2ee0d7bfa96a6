DROP TABLE system_expert_requests;
